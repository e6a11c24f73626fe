/* ed_law.h — the input law of paper 004's edit-distance data ("Do Efficient
 * Transformers Really Save Computation?"), shared by test_cot_ed.c and
 * test_cot_ed_local.c: statistics of a separate re-implementation of the public
 * generator (Python, ED_LAW_DRAWS draws per size) and the check of sample means
 * against them.  Both tasks draw their strings by this law. */
#ifndef ATTNLAB_TESTS_ED_LAW_H
#define ATTNLAB_TESTS_ED_LAW_H

#include "check.h"

#include <math.h>

typedef struct EdLaw {
    int l;
    double mean, sd, mean_uniform, sd_uniform, p_shorter, p_equal, letters, sd_letters;
} EdLaw;
enum { ED_LAW_DRAWS = 200000 };

static const EdLaw ED_LAW_SMALL = { 4, 5.2214, 2.7107, 2.5272, 1.1962, 0.4263, 0.2308, 3.9868, 1.1470 };
static const EdLaw ED_LAW_LARGE = { 7, 8.5926, 4.3628, 3.8906, 1.8840, 0.4384, 0.2183, 5.1510, 1.5306 };

/* got, a mean over draws, within 5 standard errors of the law's want. */
static inline void ed_law_check_mean(double got, double want, double sd, int draws, const char *what, int l) {
    double se = sd * sqrt(1.0 / draws + 1.0 / ED_LAW_DRAWS);
    CHECK(fabs(got - want) < 5 * se, "l = %d: %s %.4f, public law %.4f (se %.4f)", l, what, got, want, se);
}

/* The sums over draws samples (answers, unit-cost answers, first strings shorter
 * than l, equal lengths, distinct letters used) against the law. */
static inline void ed_law_check(const EdLaw *ref, double sum_ans, double sum_ans_uniform, double n_shorter,
                                double n_equal, double sum_letters, int draws) {
    int l = ref->l;
    ed_law_check_mean(sum_ans / draws, ref->mean, ref->sd, draws, "mean answer", l);
    ed_law_check_mean(sum_ans_uniform / draws, ref->mean_uniform, ref->sd_uniform, draws, "mean unit-cost answer", l);
    ed_law_check_mean(n_shorter / draws, ref->p_shorter, sqrt(ref->p_shorter * (1 - ref->p_shorter)), draws,
                      "P(first string shorter than l)", l);
    ed_law_check_mean(n_equal / draws, ref->p_equal, sqrt(ref->p_equal * (1 - ref->p_equal)), draws,
                      "P(equal lengths)", l);
    ed_law_check_mean(sum_letters / draws, ref->letters, ref->sd_letters, draws, "mean letters used", l);
}

#endif
