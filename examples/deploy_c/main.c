/* Classify the test digits with the CNN compiled by build.py into libdigits.so.
 * Usage: digits_main digits.bin   (prints the test accuracy) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "digits.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s digits.bin\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    int64_t n = 0;
    if (!f || fread(&n, sizeof n, 1, f) != 1) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    const int64_t *shape = digits_input_shape(0);
    if (digits_input_rank(0) != 4 || shape[0] != n || shape[1] * shape[2] * shape[3] != 64) {
        fprintf(stderr, "%s holds %lld digits; the library was built for a batch of %lld\n",
                argv[1], (long long)n, (long long)shape[0]);
        return 2;
    }
    float *x = malloc(sizeof(float) * n * 64);
    int64_t *labels = malloc(sizeof(int64_t) * n);
    float *logits = malloc(sizeof(float) * n * 10);
    if (!x || !labels || !logits || fread(x, sizeof(float), n * 64, f) != (size_t)(n * 64) ||
        fread(labels, sizeof(int64_t), n, f) != (size_t)n) {
        fprintf(stderr, "cannot read the digits from %s\n", argv[1]);
        return 2;
    }
    fclose(f);
    const void *inputs[] = {x};
    void *outputs[] = {logits};
    int rc = digits(inputs, outputs);
    if (rc != 0) {
        fprintf(stderr, "digits() returned %d\n", rc);
        return 3;
    }
    int64_t right = 0;
    for (int64_t i = 0; i < n; i++) {
        int best = 0;
        for (int k = 1; k < 10; k++)
            if (logits[i * 10 + k] > logits[i * 10 + best]) best = k;
        right += best == labels[i];
    }
    printf("C: test accuracy %.4f (%lld/%lld)\n", (double)right / n, (long long)right,
           (long long)n);
    free(x);
    free(labels);
    free(logits);
    return 0;
}
