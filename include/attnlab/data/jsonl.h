/* jsonl.h — sequence datasets as JSON Lines: what `./train data` writes and what
 * task type "file" reads, so users can bring their own sequence tasks.
 *
 * One JSON object per line (the full specification is data/README.md):
 *
 *   {"tokens": [3, 1, 4], "labels": [-1, -1, 1], "mask": [0, 0, 1], "group": 2}
 *
 *   tokens        required; 1..max_len integers ≥ 0 (token ids)
 *   labels        required; one integer per token: the target class at that position
 *   mask          required; one 0/1 per token: 1 = scored (target = label, which must be
 *                 ≥ 0), 0 = not scored (label ignored; −1 is the customary filler)
 *   group         optional integer ≥ 0 for per-group metrics (e.g. Dyck 0/1/2)
 *   prompt_len, answer_start, answer_len
 *                 optional, all three or none (chain of thought, see example.h)
 *
 * Lines are separated by '\n' ("\r\n" accepted); the last newline is optional; a
 * UTF-8 byte-order mark at the start is skipped; blank lines, unknown keys and
 * duplicate keys are errors.  "group" and the chain-of-thought keys must be on
 * every line or on none.  Rows may differ in length: the Dataset holds them
 * right-padded to the longest row with a pad token and DATASET_IGNORE targets (with
 * causal attention padding after the last real token cannot affect a scored
 * position; with bidirectional attention it is visible to the model).
 *
 * Reading is strict and never trusts the input: every error names the file, the
 * line (and column for JSON syntax) and the field, with code 2; lines, rows and the
 * padded size are bounded, and nesting is checked before cJSON parses a line, so
 * any input fails cleanly in bounded memory.
 *
 * Per-row facts live in Dataset.info (always allocated by the reader): len, group
 * (0 when the file has none), prompt_len / answer_start / answer_len (0 / −1 / 0
 * when the file has none); Dataset.pad_id is the padding token. */
#ifndef ATTNLAB_DATA_JSONL_H
#define ATTNLAB_DATA_JSONL_H

#include "attnlab/data/dataset.h"
#include "attnlab/util/error.h"

#include <stddef.h>

#define JSONL_MAX_LINE_BYTES (4 << 20)   /* default line limit: 64 bytes per token of a longest row */
#define JSONL_MAX_ROW_LEN 65536          /* default tokens per row: the config's seq_len limit */
#define JSONL_MAX_CELLS (1LL << 27)      /* default rows × padded length: 1 GiB of tokens + targets */
#define JSONL_MAX_ID 16777215            /* largest token id or class when no limit is given */
#define JSONL_MAX_GROUP 1000000

/* The optional keys a file has, or the writer writes (bit flags). */
enum { JSONL_GROUP = 1, JSONL_COT = 2 };

/* Zero-initialise for every default. */
typedef struct JsonlOptions {
    int vocab_size;         /* > 0: tokens must be < this; 0: vocab = max token + 1 */
    int n_classes;          /* > 0: scored labels must be < this; 0: max scored label + 1 */
    int pad_id_set;         /* 0: if rows differ in length, pad with a fresh id equal to
                               the vocabulary size (which then grows by one) */
    int pad_id;             /* with pad_id_set: pad with this id (e.g. your own <pad>);
                               ≥ 0, and < vocab_size when that is given */
    int max_len;            /* tokens per row; 0 = JSONL_MAX_ROW_LEN */
    size_t max_line_bytes;  /* 0 = JSONL_MAX_LINE_BYTES */
    long long max_cells;    /* tokens in a file, and rows × padded length; 0 =
                               JSONL_MAX_CELLS (at most 2^30) */
} JsonlOptions;

/* What a read found besides the Dataset. */
typedef struct JsonlStats {
    int fields;          /* JSONL_GROUP | JSONL_COT: the optional keys of the file */
    int min_len;         /* shortest row (the longest is the Dataset's seq_len) */
    long long n_scored;  /* positions with mask 1 */
} JsonlStats;

/* Reads one file into *out (dataset_free it): n rows right-padded to seq_len = the
 * longest row, info set for every row, vocab_size and n_classes as given or
 * inferred (vocab includes the pad id), pad_id = the padding token, or −1 when no
 * row is shorter than seq_len.  stats may be NULL.  Returns 0, or 2 with err
 * "PATH:LINE: what" ("cannot open 'PATH': ..." / "cannot read 'PATH': ..." when the
 * file itself fails); on error *out is zeroed. */
int  jsonl_read(const char *path, const JsonlOptions *opt, Dataset *out, JsonlStats *stats, AlError *err);
/* Reads a training and a test file with one vocabulary, one class count and one pad
 * id for both (inferred over both files unless given; pad_id is set in both when
 * either needs padding), as task type "file" needs.  Each keeps its own seq_len:
 * create the model for max(train, test).  stats (NULL, or two entries) gets the
 * train and test stats. */
int  jsonl_read_pair(const char *train_path, const char *test_path, const JsonlOptions *opt,
                     Dataset *train, Dataset *test, JsonlStats *stats, AlError *err);
/* jsonl_read of text already in memory (need not be NUL-terminated); `name` stands
 * for the file name in messages.  The entry point for fuzzing. */
int  jsonl_parse(const char *name, const char *text, size_t len, const JsonlOptions *opt,
                 Dataset *out, JsonlStats *stats, AlError *err);

/* Writes d as JSON Lines to path, atomically (atomic_file.h).  Row r has its first
 * d->info[r].len positions (all seq_len when info is NULL); labels are the targets
 * with −1 where not scored, and mask[i] = (target ≥ 0).  fields (JSONL_GROUP,
 * JSONL_COT; both need d->info) adds "group" and the chain-of-thought keys.
 * Returns 0; 2 for rows that would not read back (negative token, length out of
 * range, nothing scored, ...), naming the row; 1 when the file cannot be written. */
int  jsonl_write(const char *path, const Dataset *d, int fields, AlError *err);

#endif
