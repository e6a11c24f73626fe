/* fuzz_jsonl.c — the JSONL dataset reader (src/data/jsonl.c).
 *
 * Input: the text of a .jsonl file, read twice: with every limit inferred, and
 * with a fixed vocabulary, class count, pad id and row length (the checks against
 * given limits).  Checks:
 *   - a rejected file has code 2 and a message that starts with its name;
 *   - an accepted one gives a Dataset whose every token, target and row fact is
 *     in range, and which jsonl_write writes and jsonl_read reads back unchanged
 *     (what ./train data writes, task type "file" reads). */
#include "fuzz.h"
#include "attnlab/data/jsonl.h"

#include <stdlib.h>
#include <string.h>

#define NAME "fuzz.jsonl"

static void check_dataset(const Dataset *d) {
    if (d->n < 1 || d->seq_len < 1 || !d->info) fuzz_fail("accepted a dataset of %d x %d rows", d->n, d->seq_len);
    for (int r = 0; r < d->n; r++) {
        const RowInfo *x = &d->info[r];
        if (x->len < 1 || x->len > d->seq_len) fuzz_fail("row %d: length %d of %d", r, x->len, d->seq_len);
        for (int i = 0; i < d->seq_len; i++) {
            int t = dataset_tokens(d, r)[i], y = dataset_targets(d, r)[i];
            if (t < 0 || t >= d->vocab_size) fuzz_fail("row %d: token %d not below %d", r, t, d->vocab_size);
            if (y < DATASET_IGNORE || y >= d->n_classes) fuzz_fail("row %d: target %d of %d classes", r, y, d->n_classes);
            if (i >= x->len && (t != d->pad_id || y != DATASET_IGNORE)) fuzz_fail("row %d: padding is not pad/ignore", r);
        }
    }
}

static int same_dataset(const Dataset *a, const Dataset *b) {
    size_t cells = (size_t)a->n * (size_t)a->seq_len;
    return a->n == b->n && a->seq_len == b->seq_len && a->vocab_size == b->vocab_size &&
           a->n_classes == b->n_classes && a->pad_id == b->pad_id &&
           !memcmp(a->tokens, b->tokens, cells * sizeof(int)) && !memcmp(a->targets, b->targets, cells * sizeof(int)) &&
           !memcmp(a->info, b->info, (size_t)a->n * sizeof(RowInfo));
}

static void check_write_read(const Dataset *d, int fields) {
    const char *path = fuzz_path("written.jsonl");
    AlError err = {0};
    if (jsonl_write(path, d, fields, &err)) fuzz_fail("an accepted dataset does not write: %s", err.msg);
    Dataset back;
    if (jsonl_read(path, NULL, &back, NULL, &err)) fuzz_fail("a written dataset does not read back: %s", err.msg);
    if (!same_dataset(d, &back)) fuzz_fail("a written dataset reads back different");
    dataset_free(&back);
}

static void read_with(const uint8_t *data, size_t size, const JsonlOptions *opt, int round_trip) {
    Dataset d;
    JsonlStats st;
    AlError err = {0};
    if (jsonl_parse(NAME, (const char *)data, size, opt, &d, &st, &err)) {
        if (err.code != 2 || !fuzz_starts_with(err.msg, NAME))
            fuzz_fail("rejected file: code %d, message does not start with the name: %s", err.code, err.msg);
        return;
    }
    check_dataset(&d);
    if (round_trip) check_write_read(&d, st.fields);
    dataset_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const JsonlOptions inferred = {0};
    static const JsonlOptions given = { .vocab_size = 16, .n_classes = 4, .pad_id_set = 1, .pad_id = 0,
                                        .max_len = 64, .max_line_bytes = 2048, .max_cells = 4096 };
    read_with(data, size, &inferred, 1);
    read_with(data, size, &given, 0);
    return 0;
}
