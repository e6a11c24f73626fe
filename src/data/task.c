/* task.c — see task.h. */
#include "attnlab/data/task.h"
#include "attnlab/data/match2.h"
#include "attnlab/data/seqset.h"

#include <stdio.h>
#include <string.h>

static int build_match2(const Config *c, TaskData *td, AlError *err) {
    const CfgTask *t = &c->task;
    Rng train_rng = rng_stream(c->seed, 0x747261696e /* "train" */);
    Rng test_rng = rng_stream(c->seed, 0x74657374 /* "test" */);
    Match2Stats tr, te;
    if (match2_generate(&td->train, t->train_size, t->seq_len, t->modulus, &train_rng, NULL, &tr, err))
        return err->code;
    SeqSet seen;
    seqset_init(&seen, t->seq_len, td->train.n);
    seqset_add_rows(&seen, td->train.tokens, td->train.n);
    int rc = match2_generate(&td->test, c->eval.test_size, t->seq_len, t->modulus, &test_rng, &seen, &te, err);
    seqset_free(&seen);
    if (rc) return rc;
    td->n_distinct_train = tr.n_distinct;
    snprintf(td->summary, sizeof td->summary,
             "match2 N=%d M=%d: %d train sequences (%d distinct, %d permuted top-ups, %ld draws), "
             "%d test sequences disjoint from train",
             t->seq_len, t->modulus, td->train.n, tr.n_distinct, tr.n_topped_up, (long)tr.draws,
             td->test.n);
    return 0;
}

int task_build(const Config *c, TaskData *td, AlError *err) {
    memset(td, 0, sizeof *td);
    int rc = 0;
    switch (c->task.type) {
    case TASK_MATCH2: rc = build_match2(c, td, err); break;
    }
    if (rc) {
        task_free(td);
        return rc;
    }
    td->vocab_size = td->train.vocab_size;
    td->n_classes = td->train.n_classes;
    td->seq_len = td->train.seq_len;
    return 0;
}

void task_free(TaskData *td) {
    dataset_free(&td->train);
    dataset_free(&td->test);
}
