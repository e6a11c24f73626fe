/* cot_lis.c — see cot_lis.h.
 *
 * Values are written straight into the token buffer as tokens (LIS_NUM0 + v):
 * the shift keeps their order, so the dp runs on the tokens themselves.  The dp
 * here is patience sorting, O(n log n); the tests re-derive it with the public
 * O(n²) double loop, so the two can only agree if both are right. */
#include "attnlab/data/cot_lis.h"

#include "cot_common.h"
#include "param_check.h"

int lis_number_range(const LisParams *p) {
    if (p->number_range) return p->number_range;
    int a = p->length + 150, b = 2 * p->length + 1;
    return a > b ? a : b;
}

int lis_check(const LisParams *p, AlError *err) {
    int n = p->length;
    if (param_in_range(err, "lis", "length", n, 3, LIS_MAX_LENGTH, "3 planted numbers at least")) return 2;
    int r = lis_number_range(p);
    if (r < 2 * n + 1 || r > LIS_MAX_NUMBER_RANGE)
        return al_fail(err, 2, "lis: number_range %d must be in [2*length+1 = %d, %d] (inputs "
                       "are drawn from [length+1, number_range), up to length of them distinct), "
                       "or 0 for max(length+150, 2*length+1)", r, 2 * n + 1, LIS_MAX_NUMBER_RANGE);
    if (p->direct != 0 && p->direct != 1)
        return al_fail(err, 2, "lis: direct %d must be 0 or 1", p->direct);
    return 0;
}

int lis_vocab_size(const LisParams *p) { return lis_number_range(p) + LIS_NUM0; }
int lis_max_len(const LisParams *p) { return p->direct ? p->length + 3 : 2 * p->length + 4; }

const char *lis_token_name(const LisParams *p, int id) {
    static const char *const special[LIS_NUM0] = { "<pad>", "<sep>", "<eos>" };
    if (id >= 0 && id < LIS_NUM0) return special[id];
    if (id >= LIS_NUM0 && id < lis_vocab_size(p)) return cot_number_name(id - LIS_NUM0);
    return "?";
}

int lis_dp(const int *a, int n, int *dp) {
    AL_ASSERT(n >= 0 && n <= LIS_MAX_LENGTH);
    /* tail[k] = smallest last element of a strictly increasing subsequence of
     * length k + 1 so far; increasing in k.  The first k with tail[k] ≥ a[i] is
     * the length of the longest one that a[i] can extend. */
    int tail[LIS_MAX_LENGTH], best = 0;
    for (int i = 0; i < n; i++) {
        int lo = 0, hi = best;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (tail[mid] < a[i]) lo = mid + 1; else hi = mid;
        }
        tail[lo] = a[i];
        if (lo == best) best++;
        dp[i] = lo + 1;
    }
    return best;
}

/* k values of [0, m) without replacement, in increasing order (Knuth's selection
 * sampling: v is taken with probability still-needed / still-available, which
 * makes every k-subset equally likely and needs no scratch or sort). */
static void sorted_sample(Rng *rng, int m, int k, int *out) {
    for (int v = 0; v < m && k > 0; v++)
        if ((int)rng_below(rng, (uint32_t)(m - v)) < k) {
            *out++ = v;
            k--;
        }
}

/* Sizes of the planted runs (public get_seq); returns how many (the last may be 0). */
static int draw_run_sizes(Rng *rng, int n, int size[3]) {
    int k = 1 + (int)rng_below(rng, 3);
    int total = 3 + (int)rng_below(rng, (uint32_t)(n - 2));
    if (k == 1) {
        size[0] = total;
    } else if (k == 2) {
        size[0] = 1 + (int)rng_below(rng, (uint32_t)(total / 2 + 1));
        size[1] = total - size[0];
    } else {
        size[0] = 1 + (int)rng_below(rng, (uint32_t)(total / 3 + 1));
        size[1] = 1 + (int)rng_below(rng, (uint32_t)((total - size[0]) / 2 + 1));
        size[2] = total - size[0] - size[1];
    }
    return k;
}

/* The input a_1..a_n, as tokens, into tok[0..n). */
static void draw_input(const LisParams *p, Rng *rng, int *tok) {
    int n = p->length, lo = n + 1, width = lis_number_range(p) - lo;
    int size[3], planted[LIS_MAX_LENGTH], total = 0;
    int runs = draw_run_sizes(rng, n, size);
    for (int r = 0; r < runs; r++) {
        sorted_sample(rng, width, size[r], planted + total);
        total += size[r];
    }
    for (int i = 0; i < n; i++) tok[i] = LIS_NUM0 + lo + (int)rng_below(rng, (uint32_t)width);
    /* Positions: selection sampling again, so the chosen ones come left to right
     * and take the planted numbers in order (public: seq[sorted(places)] = numbers). */
    for (int i = 0, next = 0; i < n && next < total; i++)
        if ((int)rng_below(rng, (uint32_t)(n - i)) < total - next)
            tok[i] = LIS_NUM0 + lo + planted[next++];
}

void lis_sample(const LisParams *p, Rng *rng, Example *ex) {
    int n = p->length, dp[LIS_MAX_LENGTH];
    draw_input(p, rng, ex->tokens);
    ex->len = n;
    int best = lis_dp(ex->tokens, n, dp);
    cot_end_prompt(ex, LIS_SEP);
    if (!p->direct)
        for (int i = 0; i < n; i++) cot_put(ex, LIS_NUM0 + dp[i]);
    cot_finish(ex, p->direct, LIS_SEP, LIS_NUM0 + best, LIS_EOS);
    AL_ASSERT(ex->len == lis_max_len(p));
}

int lis_extract_answer(const LisParams *p, const int *tokens, int len, int *start, int *alen) {
    return cot_extract_final(tokens, len, LIS_SEP, LIS_EOS, LIS_NUM0, lis_number_range(p), start, alen);
}

int lis_prompt_key_len(const LisParams *p) { return p->length + 1; }

void lis_prompt_key(const LisParams *p, const Example *ex, int *key) {
    cot_prompt_key(ex, lis_prompt_key_len(p), LIS_PAD, key);
}
