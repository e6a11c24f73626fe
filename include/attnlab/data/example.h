/* example.h — one generated example, the common output of every task generator.
 *
 * Generators write tokens and per-position targets (DATASET_IGNORE = not scored)
 * into caller-owned buffers of capacity max_len, so streaming training draws fresh
 * examples without malloc.  Targets are whatever the model must predict at that
 * position: a class (Match2, Dyck, index lookup), the k-hop answer, or the next
 * token (chain-of-thought language modelling, where n_classes = vocab_size).
 *
 * Variable-length examples are right-padded by the dataset code (pad token,
 * ignored targets).  With causal attention or an LSTM, padding after the last
 * real token cannot influence any scored position, so no attention mask is needed. */
#ifndef ATTNLAB_DATA_EXAMPLE_H
#define ATTNLAB_DATA_EXAMPLE_H

typedef struct Example {
    int  len;           /* tokens written, 1..max_len */
    int *tokens;        /* capacity max_len, caller-owned */
    int *targets;       /* capacity max_len, caller-owned; −1 = not scored */
    /* Chain of thought: generation starts after the prompt; the final answer is
     * tokens[answer_start .. answer_start + answer_len) (it ends before <eos>).
     * Other tasks: prompt_len = 0, answer_start = −1, answer_len = 0. */
    int  prompt_len;
    int  answer_start, answer_len;
    /* Task-specific group for per-group metrics (k-hop: the hop count; Dyck: 0 =
     * positive, 1 = negative with an invalid depth profile, 2 = negative with a
     * valid depth profile, i.e. only bracket types wrong); 0 when unused. */
    int  group;
} Example;

#endif
