/* lstm.c — paper 003's recurrent baseline: n_layers LSTM layers of width d_model
 * between the token embedding and the head (model.h), dropout between layers.
 * One fused op per layer (ad_lstm, PyTorch gate order i, f, g, o). */
#include "model_internal.h"
#include "attnlab/util/error.h"

#include <math.h>

void lstm_declare(Model *m) {
    int d = m->cfg.d_model;
    m->lstm = al_calloc((size_t)m->cfg.n_layers, sizeof *m->lstm);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        LstmLayer *L = &m->lstm[l];
        L->w_ih = model_decl(m, 1, 2, (int[]){4 * d, d}, "lstm.%d.weight_ih", l);
        L->w_hh = model_decl(m, 1, 2, (int[]){4 * d, d}, "lstm.%d.weight_hh", l);
        L->b = model_decl(m, 0, 1, (int[]){4 * d}, "lstm.%d.bias", l);
    }
}

/* nn.LSTM draws every weight and both biases from U(±1/√d); the folded bias is one
 * such draw (its variance is half of torch's b_ih + b_hh — immaterial at init). */
void lstm_init(Model *m, Rng *r) {
    double bound = 1.0 / sqrt(m->cfg.d_model);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        model_fill_uniform(m->lstm[l].w_ih, r, bound);
        model_fill_uniform(m->lstm[l].w_hh, r, bound);
        model_fill_uniform(m->lstm[l].b, r, bound);
    }
}

Tensor *lstm_forward(Model *m, Tape *t, Tensor *x) {
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const LstmLayer *L = &m->lstm[l];
        x = ad_lstm(t, x, L->w_ih, L->w_hh, L->b);
        if (l + 1 < m->cfg.n_layers) x = ad_dropout(t, x, m->cfg.dropout);
    }
    return x;
}

double lstm_flops_per_seq(const Model *m, int T) {
    double d = m->cfg.d_model;
    return m->cfg.n_layers * (2.0 * T * d * 4 * d * 2);   /* input and recurrent projections */
}
