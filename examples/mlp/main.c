/* Links the compiled MLP (build/mlp.o + build/mlp.h) into a plain C99 program and checks that
 * it reproduces TensorFlow's output for a fixed input. No TensorFlow, no runtime library. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mlp.h"

/* TensorFlow's softmax output for x = linspace(-1, 1, 784), from examples/mlp/expected.txt. */
static const float expected[10] = {0.073765f, 0.073521f, 0.083443f, 0.315283f, 0.115297f,
                                   0.054588f, 0.034095f, 0.068834f, 0.140299f, 0.040874f};

/* The caller owns all memory: inputs, outputs and MLP_ALIGN-aligned scratch. C99 has no
 * alignment specifier, so the scratch starts at the first aligned address of a larger buffer. */
static unsigned char temp_storage[MLP_TEMP_BYTES + MLP_ALIGN];

static void *aligned_temp(void) {
    uintptr_t offset = (uintptr_t)temp_storage % MLP_ALIGN;
    return temp_storage + (offset ? MLP_ALIGN - offset : 0);
}

int main(void) {
    float x[MLP_ARG0_BYTES / sizeof(float)];
    float y[MLP_RESULT0_BYTES / sizeof(float)];
    float y_again[MLP_RESULT0_BYTES / sizeof(float)];
    const int n = (int)(sizeof x / sizeof x[0]);
    for (int i = 0; i < n; i++) x[i] = (float)(-1.0 + 2.0 * i / (n - 1));

    void *temp = aligned_temp();
    if (mlp_run(x, y, temp) != 0) return 1;

    /* The generic entry point takes arrays of buffer pointers, e.g. for a tool or a binding. */
    const void *args[MLP_NUM_ARGS] = {x};
    void *results[MLP_NUM_RESULTS] = {y_again};
    if (mlp_run_buffers(args, results, temp) != 0) return 1;

    int best = 0;
    float max_error = 0.0f;
    for (int i = 0; i < 10; i++) {
        printf("p[%d] = %.6f\n", i, y[i]);
        if (y[i] > y[best]) best = i;
        max_error = fmaxf(max_error, fabsf(y[i] - expected[i]));
    }
    int same = memcmp(y, y_again, sizeof y) == 0;
    printf("argmax = %d, max |aotc - TensorFlow| = %.2g, entry points agree: %s\n", best,
           max_error, same ? "yes" : "no");
    if (max_error > 1e-5f || !same) {
        printf("FAIL\n");
        return 1;
    }
    printf("OK\n");
    return 0;
}
