/* lstm.c — paper 003's recurrent baseline: n_layers LSTM layers of width d_model
 * between the token embedding and the head (model.h), dropout between layers.
 * One fused op per layer (ad_lstm, PyTorch gate order i, f, g, o). */
#include "model_internal.h"
#include "attnlab/util/error.h"

#include "attnlab/util/gemm.h"

#include <math.h>
#include <string.h>

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
    return model_keep(m, t, x);   /* only the head is left */
}

double lstm_flops_per_seq(const Model *m, int T) {
    double d = m->cfg.d_model;
    return m->cfg.n_layers * (2.0 * T * d * 4 * d * 2);   /* input and recurrent projections */
}

double lstm_param_count(const CfgModel *c, int max_len) {
    (void)max_len;
    double d = c->d_model;
    return c->n_layers * (8 * d * d + 4 * d);
}

/* ad_lstm keeps the gates, the cell and the output per step (values and gradients). */
double lstm_activation_floats(const CfgModel *c) { return 20.0 * c->d_model; }

/* Decoding state per layer and sequence: h, then c. */
size_t lstm_state_floats(const Model *m) { return 2 * (size_t)m->cfg.d_model; }

static float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

/* One cell step per layer on x (B, 1, d), gates (i, f, g, o) as in ad_lstm. */
Tensor *lstm_step(Model *m, Tape *t, Tensor *x, float *state, int batch) {
    int B = x->shape[0], dm = m->cfg.d_model;
    size_t S = lstm_state_floats(m);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const LstmLayer *L = &m->lstm[l];
        float *z = tape_scratch(t, (size_t)B * 4 * dm * sizeof(float));
        float *hs = tape_scratch(t, (size_t)B * dm * sizeof(float));
        for (int b = 0; b < B; b++) {
            memcpy(z + (size_t)b * 4 * dm, L->b->data, (size_t)4 * dm * sizeof(float));
            memcpy(hs + (size_t)b * dm, state + ((size_t)l * batch + b) * S, (size_t)dm * sizeof(float));
        }
        al_sgemm(CblasNoTrans, CblasTrans, B, 4 * dm, dm, 1, x->data, dm, L->w_ih->data, dm, 1, z, 4 * dm);
        al_sgemm(CblasNoTrans, CblasTrans, B, 4 * dm, dm, 1, hs, dm, L->w_hh->data, dm, 1, z, 4 * dm);
        Tensor *out = tape_tensor(t, 0, 3, (int[]){B, 1, dm});
        for (int b = 0; b < B; b++) {
            float *h = state + ((size_t)l * batch + b) * S, *c = h + dm;
            const float *zb = z + (size_t)b * 4 * dm;
            for (int j = 0; j < dm; j++) {
                float i = sigmoid(zb[j]), f = sigmoid(zb[dm + j]), g = tanhf(zb[2 * dm + j]), o = sigmoid(zb[3 * dm + j]);
                c[j] = f * c[j] + i * g;
                out->data[(size_t)b * dm + j] = h[j] = o * tanhf(c[j]);
            }
        }
        x = out;
    }
    return x;
}
