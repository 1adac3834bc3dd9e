/* Links two aotc-compiled models into one program and runs each on inputs read from files:
 * app DIR reads DIR/<model>.arg<i> (raw bytes) and writes DIR/<model>.result<i>. Used by the
 * CMake, Make and Bazel tests (tests/test_buildsys_*.py), which compare the results with
 * TensorFlow's stored outputs. */
#include <stdio.h>
#include <stdlib.h>

#include "matmul.h"
#include "mlp.h"

static void *read_file(const char *dir, const char *name, int i, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.arg%d", dir, name, i);
    FILE *f = fopen(path, "rb");
    void *data = malloc(bytes ? bytes : 1);
    if (!f || !data || fread(data, 1, bytes, f) != bytes) {
        fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, path);
        exit(1);
    }
    fclose(f);
    return data;
}

static void write_file(const char *dir, const char *name, int i, const void *data, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.result%d", dir, name, i);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* One runner per model, from the names the header defines. */
#define RUNNER(name, NAME)                                                                  \
    static int run_##name(const char *dir) {                                                \
        const void *args[NAME##_NUM_ARGS];                                                  \
        void *results[NAME##_NUM_RESULTS];                                                  \
        for (int i = 0; i < NAME##_NUM_ARGS; i++)                                           \
            args[i] = read_file(dir, #name, i, name##_arg_info[i].bytes);                   \
        for (int j = 0; j < NAME##_NUM_RESULTS; j++)                                        \
            results[j] = malloc(name##_result_info[j].bytes);                               \
        void *temp = aligned_alloc(NAME##_ALIGN,                                            \
                                   (NAME##_TEMP_BYTES + NAME##_ALIGN) / NAME##_ALIGN * NAME##_ALIGN); \
        if (name##_run_buffers(args, results, temp) != 0) return 1;                         \
        for (int j = 0; j < NAME##_NUM_RESULTS; j++)                                        \
            write_file(dir, #name, j, results[j], name##_result_info[j].bytes);             \
        printf("%s: %d results\n", #name, NAME##_NUM_RESULTS);                              \
        return 0;                                                                           \
    }

RUNNER(mlp, MLP)
RUNNER(matmul, MATMUL)

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    return run_mlp(argv[1]) || run_matmul(argv[1]);
}
