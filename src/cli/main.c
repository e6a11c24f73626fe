/* main.c — the attnlab command line (placeholder until the trainer lands). */
#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: ./train CONFIG.json [--set key.path=value]... [--out DIR] [--resume] [--quiet]\n"
               "       ./train --help\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    fprintf(stderr, "attnlab: the trainer is not built yet\n");
    return 1;
}
