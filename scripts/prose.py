"""scripts/prose.py — the words and the wrapping shared by the scripts that write the
sentences of the results write-ups from their data (scripts/prose_template,
scripts/protocol_prose).  Standard library only; imported from the scripts' folder."""
import re

WIDTH = 88


def unwrap(par, indent=""):
    """One line per paragraph; two spaces where a line ends a sentence and the next starts one."""
    lines = par.split("\n")
    out = lines[0]
    for prev, line in zip(lines, lines[1:]):
        if indent and line.startswith(indent):
            line = line[len(indent):]
        sentence_end = re.search(r"[.!?]\)?$", prev) and re.match(r"[A-Z(`]", line)
        out += ("  " if sentence_end else " ") + line
    return out


def wrap(text, indent="", width=WIDTH):
    """Wrap at width columns, never inside "12 000", around " = " or after "Fig."; two
    spaces between sentences are kept where they do not end a line."""
    text = re.sub(r"(?<=\d) (?=\d{3}(?!\d))", "\0", text)
    text = text.replace(" = ", "\0=\0")
    text = re.sub(r"\b(Fig|Figs|App|Table|§)\. (?=\w)", "\\1.\0", text)
    parts = re.split(r"( +)", text)
    words, seps = parts[0::2], parts[1::2]
    lines, cur = [], words[0]
    for word, sep in zip(words[1:], seps):
        if len(cur) + len(sep) + len(word) <= width:
            cur += sep + word
        else:
            lines.append(cur)
            cur = indent + word
    lines.append(cur)
    return "\n".join(lines).replace("\0", " ")


def flat(s):
    return re.sub(r"\s+", " ", s)


def pct(x, digits=1):
    """0.598 -> "59.8%"; pct(0.95, 0) -> "95%"."""
    return "%.*f%%" % (digits, 100 * x)


def steps(k):
    """12000 -> "12 000"."""
    return "{:,}".format(k).replace(",", " ")


def andlist(xs):
    xs = list(xs)
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def span(values, fmt):
    """The range of values in words: "2 000" when they print the same, "2 000 to 18 000" when not."""
    v = sorted(values)
    lo, hi = fmt(v[0]), fmt(v[-1])
    return lo if lo == hi else "%s to %s" % (lo, hi)
