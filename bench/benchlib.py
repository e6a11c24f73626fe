"""benchlib.py — what the bench scripts share: running a command, building an older
commit next to this checkout, and a line naming the machine a measurement ran on."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def sh(cmd, cwd=ROOT, who="bench"):
    """Runs cmd in cwd; its output, or an exit naming the command and the output's tail."""
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"{who}: {' '.join(cmd)} failed in {cwd}:\n{r.stdout[-2000:]}")
    return r.stdout


def build_commit(commit, tmp, who="bench"):
    """Clones this repository into tmp/old, checks out commit and builds it (its own
    ./train builds build/ in Release).  Returns the clone's folder."""
    old = os.path.join(tmp, "old")
    sh(["git", "clone", "-q", ROOT, old], tmp, who)
    sh(["git", "checkout", "-q", commit], old, who)
    print(f"{who}: building {commit} in {old} …", file=sys.stderr)
    sh(["./train", "--help"], old, who)
    return old


def head(who="bench"):
    """This checkout's short commit, with '+' when the work tree has changes."""
    h = sh(["git", "rev-parse", "--short", "HEAD"], ROOT, who).strip()
    dirty = sh(["git", "status", "--porcelain", "--untracked-files=no"], ROOT, who).strip()
    return h + ("+" if dirty else "")


def machine():
    """'AMD EPYC, 2 cores, OpenBLAS 0.3.21+ds-4, load 1.2 (1-min average)'."""
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    blas = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libopenblas0-pthread"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout or "?"
    flags = open("/proc/cpuinfo").read()
    simd = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    load = open("/proc/loadavg").read().split()[0]
    return f"{cpu} ({simd}), {os.cpu_count()} cores, OpenBLAS {blas}, load {load} (1-min average at the start)"
