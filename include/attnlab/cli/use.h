/* use.h — using and looking inside a trained run folder (issue 19):
 *
 *   ./train eval RUN_DIR [--data FILE.jsonl | --seq-len N] [--by-position] [--set eval.key=value]… [--json]
 *                [--out FILE]
 *   ./train generate RUN_DIR [--prompt "tokens…" | --data FILE.jsonl] [--max-new N]
 *   ./train inspect RUN_DIR [--example N | --data FILE.jsonl] [--out DIR] [--anna CELL [--grid DIR] [--draw K]]
 *   ./train overlap RUN_DIR [--steps N] [--set eval.key=value]… [--json]
 *
 * Each loads RUN_DIR/config.json and RUN_DIR/model.safetensors (train/runload.h)
 * and rebuilds the run's datasets, so "the test set" is the run's own.  argv[0] is
 * the command's name ("eval", …).  Return the process exit code: 0, 2 for bad
 * usage or input (err names the file and line, or the option), 1 for I/O. */
#ifndef ATTNLAB_CLI_USE_H
#define ATTNLAB_CLI_USE_H

#include "attnlab/util/error.h"

/* Token / sequence / answer / per-group accuracy and loss of the run's test set
 * or --data FILE, computed by train/evaluate.c as training computes them (the run's
 * final evaluation gives the figures of its summary.json, bit for bit).  Printed as
 * text, or as JSON with --json; always written as JSON to --out FILE (default
 * RUN_DIR/eval.json, or RUN_DIR/eval_NAME.json for --data NAME.jsonl).  With
 * --by-position, also the token accuracy at each row position that has scored
 * targets ("test_position_token_acc": position from 1, tokens, token_acc). */
int cli_eval(int argc, char **argv, AlError *err);

/* Greedy decoding (KV cache or recurrent state, nn/decode.h) of a prompt, of every
 * row of --data FILE from its prompt_len, or of the run's test rows; prints the
 * tokens by name when the task names them (chain of thought), else by id.  Rows
 * with answers (chain of thought, or the file keys prompt_len / answer_start /
 * answer_len) are scored as training scores them: the answer accuracy. */
int cli_generate(int argc, char **argv, AlError *err);

/* For test row N (default 0) or every row of --data FILE (at most 16): each layer's
 * and head's attention map (nn/model.h, ModelCapture) as an SVG heatmap and all of
 * them in attention.safetensors, and per-position predictions in predictions.tsv;
 * into --out DIR (default RUN_DIR/inspect).  With --anna, also the ANNA collision
 * maps of the distilled layers (src/cli/inspect_anna.h). */
int cli_inspect(int argc, char **argv, AlError *err);

/* How many of the run's test examples (eval.test_size may be raised with --set) its
 * training also contains, by the keys that keep datasets distinct (data/overlap.h):
 * a fixed training set is compared row by row; a stream is replayed from the run's
 * seed for the steps of RUN_DIR/summary.json (or --steps N, e.g. for a run still
 * training) × train.batch_size rows.  Prints text, or JSON with --json; writes nothing. */
int cli_overlap(int argc, char **argv, AlError *err);

#endif
