/* sweep_fixture.h — the tiny 2 x 2 x 2-seed grid the sweep tests share (index
 * lookup, a few seconds per cell). */
#ifndef ATTNLAB_TESTS_SWEEP_FIXTURE_H
#define ATTNLAB_TESTS_SWEEP_FIXTURE_H

static const char *CONFIG =
    "{ \"name\": \"tiny\", \"seed\": 1,\n"
    "  \"task\": {\"type\": \"index_lookup\", \"seq_len\": 6, \"alphabet\": 4, \"min_len\": 2, \"train_size\": 200},\n"
    "  \"model\": {\"d_model\": 8, \"n_heads\": 1, \"positional\": \"learned\", \"attention\": {\"causal\": true}},\n"
    "  \"train\": {\"lr\": 0.01, \"batch_size\": 16, \"steps\": 40},\n"
    "  \"eval\": {\"every\": 20, \"test_size\": 64},\n"
    "  \"sweep\": {\"axes\": {\"model.attention.type\": [\"softmax\", \"linear\"], \"model.d_model\": [8, 16]},\n"
    "            \"seeds\": [1, 2]} }\n";

#endif
