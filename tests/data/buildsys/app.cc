// The C++ twin of app.c: runs the same two models through the classes aotc writes with
// --cpp-class (CPP_CLASS in CMake, cpp_class in Bazel), using only the API tfcompile's classes
// have, and reads and writes the same files: app_cpp DIR reads DIR/<model>.arg<i> and writes
// DIR/<model>.result<i>.
#include <cstdio>
#include <string>

#include "matmul_cc.hpp"
#include "mlp_cc.hpp"

static bool Transfer(const std::string& path, void* data, size_t bytes, bool read) {
  std::FILE* f = std::fopen(path.c_str(), read ? "rb" : "wb");
  if (f == nullptr) return false;
  const size_t done = read ? std::fread(data, 1, bytes, f) : std::fwrite(data, 1, bytes, f);
  return std::fclose(f) == 0 && done == bytes;
}

template <typename Model>
static int RunModel(const std::string& dir, const std::string& name) {
  Model model;  // allocates its argument, result and temp buffers
  for (size_t i = 0; i < Model::kNumArgs; ++i) {
    const std::string path = dir + "/" + name + ".arg" + std::to_string(i);
    const size_t bytes = static_cast<size_t>(Model::ArgSize(static_cast<int32_t>(i)));
    if (!Transfer(path, model.arg_data(i), bytes, true)) {
      std::fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, path.c_str());
      return 1;
    }
  }
  if (!model.Run()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), model.error_msg().c_str());
    return 1;
  }
  for (size_t j = 0; j < Model::kNumResults; ++j) {
    const std::string path = dir + "/" + name + ".result" + std::to_string(j);
    const size_t bytes = static_cast<size_t>(Model::ResultSize(static_cast<int32_t>(j)));
    if (!Transfer(path, model.result_data(j), bytes, false)) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  std::printf("%s: %d results\n", name.c_str(), static_cast<int>(Model::kNumResults));
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  return RunModel<demo::Mlp>(argv[1], "mlp") || RunModel<demo::MatMul>(argv[1], "matmul");
}
