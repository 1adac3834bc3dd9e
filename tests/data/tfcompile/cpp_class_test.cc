// A program written against tfcompile's generated-class API, the way tfcompile's own tests and
// docs use it, built against the headers of `aotc compile --cpp-class` (tests/test_cpp_class.py
// compiles it with -std=c++11 and -std=c++17, -Wall -Wextra -Werror). The expected numbers are
// TensorFlow's (tests/data/tfcompile/*.npz). It prints one line per failed check and exits 1
// if any failed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "test_graph_tfadd.hpp"
#include "test_graph_tfcond.hpp"
#include "test_graph_tfgather.hpp"
#include "test_graph_tfmatmul.hpp"
#include "test_graph_tfmatmulandadd.hpp"
#include "test_graph_tfvariable.hpp"
#include "test_graph_tfvariable_readonly.hpp"
#include "test_graph_tfvariable_sequential_updates.hpp"

// tfcompile's callers pass an Eigen::ThreadPoolDevice; a stand-in of that name is enough to
// show that such code compiles (aotc runs single-threaded and ignores it).
namespace Eigen {
struct ThreadPoolDevice {
  int num_threads;
};
}  // namespace Eigen

int AddInSecondTranslationUnit(int x, int y);  // cpp_class_test_second.cc

namespace {

int failures = 0;

#define CHECK_TRUE(cond)                                                   \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::printf("%s:%d: CHECK_TRUE(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                          \
    }                                                                      \
  } while (0)

#define CHECK_EQ(a, b)                                                                \
  do {                                                                                \
    if (!((a) == (b))) {                                                              \
      std::printf("%s:%d: CHECK_EQ(%s, %s) failed\n", __FILE__, __LINE__, #a, #b);    \
      ++failures;                                                                     \
    }                                                                                 \
  } while (0)

#define CHECK_NEAR(a, b, tolerance)                                                    \
  do {                                                                                 \
    if (!(std::fabs(static_cast<double>(a) - static_cast<double>(b)) <= (tolerance))) { \
      std::printf("%s:%d: CHECK_NEAR(%s, %s): %.9g vs %.9g\n", __FILE__, __LINE__, #a, #b, \
                  static_cast<double>(a), static_cast<double>(b));                    \
      ++failures;                                                                      \
    }                                                                                  \
  } while (0)

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

void AddWithScalarAccessors() {
  AddComp add;
  CHECK_EQ(add.arg0_data(), add.arg_data(0));
  CHECK_EQ(add.arg1_data(), add.arg_data(1));
  CHECK_TRUE(Aligned(add.arg_data(0)) && Aligned(add.arg_data(1)) && Aligned(add.result_data(0)));
  add.arg0() = 1;
  add.arg1() = 2;
  CHECK_TRUE(add.Run());
  CHECK_EQ(add.error_msg(), "");
  CHECK_EQ(add.result0(), 3);
  CHECK_EQ(add.result0_data()[0], 3);
  CHECK_EQ(add.result0_data(), add.results()[0]);

  add.arg0_data()[0] = 123;
  add.arg1_data()[0] = 456;
  CHECK_TRUE(add.Run());
  CHECK_EQ(add.result0(), 579);

  const AddComp& add_const = add;
  CHECK_EQ(add_const.error_msg(), "");
  CHECK_EQ(add_const.arg0(), 123);
  CHECK_EQ(add_const.arg1_data()[0], 456);
  CHECK_EQ(add_const.result0(), 579);
  CHECK_EQ(add_const.result0_data(), add_const.results()[0]);
}

void AddWithCallerBuffers() {
  AddComp add(tensorflow::XlaCompiledCpuFunction::AllocMode::RESULTS_PROFILES_AND_TEMPS_ONLY);
  CHECK_TRUE(add.arg_data(0) == nullptr);
  CHECK_TRUE(!add.Run());  // an argument without a buffer is an error, not a crash
  CHECK_TRUE(add.error_msg().find("argument 0") != std::string::npos);
  int32_t x = 10;
  int32_t y = 32;
  add.set_arg0_data(&x);
  add.set_arg1_data(&y);
  CHECK_EQ(add.arg0_data(), &x);
  CHECK_EQ(add.arg_data(1), static_cast<void*>(&y));
  CHECK_TRUE(add.Run());
  CHECK_EQ(add.error_msg(), "");
  CHECK_EQ(add.result0(), 42);
  CHECK_EQ(add.result0_data(), add.results()[0]);
}

void CondWithAPredicate() {
  CondComp cond;
  CHECK_EQ(cond.arg2_data(), cond.arg_data(2));
  cond.arg1() = 10;
  cond.arg2() = 20;
  cond.arg0() = true;  // tf.cond: x when p, else y
  CHECK_TRUE(cond.Run());
  CHECK_EQ(cond.result0(), 10);
  cond.arg0() = false;
  CHECK_TRUE(cond.Run());
  CHECK_EQ(cond.result0(), 20);
  CHECK_EQ(cond.result0_data(), cond.results()[0]);
}

void MatMulWithElementAccessors() {
  Eigen::ThreadPoolDevice device = {2};
  foo::bar::MatMulComp matmul;
  matmul.set_thread_pool(&device);
  matmul.arg0(0, 0) = 1;
  matmul.arg0(0, 1) = 2;
  matmul.arg0(0, 2) = 3;
  matmul.arg0(1, 0) = 4;
  matmul.arg0(1, 1) = 5;
  matmul.arg0(1, 2) = 6;
  for (int i = 0; i < 6; ++i) matmul.arg1(i / 2, i % 2) = static_cast<float>(7 + i);
  CHECK_TRUE(matmul.Run());
  const float want[4] = {58, 64, 139, 154};
  for (int i = 0; i < 4; ++i) {
    CHECK_EQ(matmul.result0(i / 2, i % 2), want[i]);
    CHECK_EQ(matmul.result0_data()[i], want[i]);
  }

  const float args[12] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120};
  std::copy(args + 0, args + 6, matmul.arg0_data());
  std::copy(args + 6, args + 12, matmul.arg1_data());
  CHECK_TRUE(matmul.Run());
  const float want2[4] = {5800, 6400, 13900, 15400};
  const foo::bar::MatMulComp& matmul_const = matmul;
  for (int i = 0; i < 4; ++i) CHECK_EQ(matmul_const.result0(i / 2, i % 2), want2[i]);
  for (int i = 0; i < 6; ++i) CHECK_EQ(matmul_const.arg1(i / 2, i % 2), args[i + 6]);
  CHECK_EQ(matmul_const.result0_data(), matmul.results()[0]);
}

void MatMulWithCallerBuffers() {
  foo::bar::MatMulComp matmul(
      foo::bar::MatMulComp::AllocMode::RESULTS_PROFILES_AND_TEMPS_ONLY);
  matmul.set_thread_pool(static_cast<const aotc_threadpool*>(nullptr));
  CHECK_TRUE(matmul.thread_pool() == nullptr);
  float arg0[2][3] = {{1, 2, 3}, {4, 5, 6}};
  float arg1[3][2] = {{7, 8}, {9, 10}, {11, 12}};
  matmul.set_arg0_data(&arg0);
  matmul.set_arg1_data(&arg1);
  CHECK_EQ(matmul.arg0_data(), &arg0[0][0]);
  CHECK_TRUE(matmul.Run());
  const float want[4] = {58, 64, 139, 154};
  for (int i = 0; i < 4; ++i) CHECK_EQ(matmul.result0(i / 2, i % 2), want[i]);
}

void MatMulAndAddWithNamedAccessors() {
  ::foo::bar::MatMulAndAddComp muladd;
  const float args[8] = {10, 20, 30, 40, 50, 60, 70, 80};
  std::copy(args + 0, args + 4, muladd.arg_x_data());
  std::copy(args + 4, args + 8, muladd.arg_y_data());
  CHECK_EQ(muladd.arg_x_data(), muladd.arg0_data());
  CHECK_TRUE(muladd.Run());
  const float prod[4] = {1900, 2200, 4300, 5000};
  const float sum[4] = {60, 80, 100, 120};
  for (int i = 0; i < 4; ++i) {
    CHECK_EQ(muladd.result_x_y_prod(i / 2, i % 2), prod[i]);
    CHECK_EQ(muladd.result_x_y_sum_data()[i], sum[i]);
    CHECK_EQ(muladd.result1(i / 2, i % 2), sum[i]);
  }
  CHECK_EQ(muladd.result_x_y_prod_data(), muladd.results()[0]);
  CHECK_EQ(muladd.result_x_y_sum_data(), muladd.results()[1]);

  CHECK_TRUE(muladd.HasNameIndices());
  CHECK_EQ(muladd.LookupArgIndex("x"), 0);
  CHECK_EQ(muladd.LookupArgIndex("y"), 1);
  CHECK_EQ(muladd.LookupArgIndex(""), -1);
  CHECK_EQ(muladd.LookupArgIndex("x_hold"), -1);
  CHECK_EQ(muladd.LookupResultIndex("x_y_prod"), 0);
  CHECK_EQ(muladd.LookupResultIndex("x_y_sum"), 1);
  CHECK_EQ(muladd.LookupResultIndex("x"), -1);
}

void SizesAndCounts() {
  // Bound to references: the constants link in C++11 too.
  const size_t& num_args = foo::bar::MatMulComp::kNumArgs;
  const size_t& num_results = foo::bar::MatMulComp::kNumResults;
  CHECK_EQ(num_args, 2u);
  CHECK_EQ(num_results, 1u);
  CHECK_EQ(foo::bar::MatMulComp::kNumVariables, 0u);
  CHECK_EQ(foo::bar::MatMulComp::ArgSize(0), 24);
  CHECK_EQ(foo::bar::MatMulComp::ArgSize(1), 24);
  CHECK_EQ(foo::bar::MatMulComp::ResultSize(0), 16);
  foo::bar::MatMulComp matmul;
  CHECK_EQ(matmul.num_args(), 2);
  CHECK_EQ(matmul.num_results(), 1);
  CHECK_EQ(matmul.arg_size(1), 24);
  CHECK_EQ(matmul.result_size(0), 16);
  CHECK_EQ(matmul.arg0_size(), 24);
  CHECK_EQ(matmul.arg0_count(), 6);
  CHECK_EQ(matmul.result0_count(), 4);
  CHECK_TRUE(!matmul.hlo_profiling_enabled() && matmul.profile_counters() == nullptr);
  // Two instances own separate buffers.
  foo::bar::MatMulComp other;
  CHECK_TRUE(other.arg_data(0) != matmul.arg_data(0));
}

void GatherWithVectors() {
  GatherComp gather;
  const float params[4] = {1, 2, 3, 4};
  const int32_t indices[2] = {1, 3};
  std::copy(params, params + 4, gather.arg0_data());
  std::copy(indices, indices + 2, gather.arg1_data());
  CHECK_TRUE(gather.Run());
  CHECK_EQ(gather.result0(0), 2);
  CHECK_EQ(gather.result0(1), 4);
}

void VariableCarriesStateAcrossRuns() {
  VariableComp fn;
  float x = 23;
  fn.set_var_x_data(&x);
  CHECK_EQ(VariableComp::kNumArgs, 1u);
  CHECK_EQ(VariableComp::kNumVariables, 1u);
  CHECK_EQ(VariableComp::kNumResults, 2u);  // the fetch, then the updated variable
  CHECK_EQ(fn.LookupVariableIndex("x"), 0);
  const float want[3][2] = {{23, 65}, {65, 107}, {107, 149}};
  for (int call = 0; call < 3; ++call) {
    CHECK_TRUE(fn.Run());
    CHECK_EQ(fn.result0(0, 0), want[call][0]);
    CHECK_EQ(fn.result0(1, 0), want[call][1]);
    CHECK_EQ(fn.var_x(), want[call][1]);
    CHECK_EQ(x, want[call][1]);  // updated in place, through the caller's buffer
  }
  CHECK_EQ(fn.var_x_data(), &x);
  CHECK_EQ(fn.results()[1], static_cast<void*>(&x));
}

void ReadonlyVariable() {
  VariableReadonlyComp fn;
  float x = 23;
  fn.set_var_x_data(&x);
  fn.Run();
  CHECK_EQ(fn.result0(), 65);
  CHECK_EQ(fn.var_x(), 23);
  CHECK_EQ(VariableReadonlyComp::kNumResults, 1u);  // a read-only variable is no result
}

void SequentialUpdatesInOwnBuffers() {
  // x[n+1] = x[n] - 0.1 * (x[n-1] + y), three steps per call.
  VariableSequentialUpdatesComp fn;
  fn.var_x() = 2;
  *const_cast<float*>(fn.var_y_data()) = 1;
  fn.Run();
  CHECK_NEAR(fn.var_x(), 1.187f, 1e-6);
  const float y = 1;
  fn.set_var_y_data(&y);
  fn.Run();
  CHECK_NEAR(fn.var_x(), 0.594322f, 1e-6);
}

void SequentialUpdatesInCallerBuffers() {
  VariableSequentialUpdatesComp fn(
      VariableSequentialUpdatesComp::AllocMode::RESULTS_PROFILES_AND_TEMPS_ONLY);
  float x = 2;
  float y = 1;
  fn.set_var_x_data(&x);
  fn.set_var_y_data(&y);
  fn.Run();
  CHECK_NEAR(x, 1.187f, 1e-6);
  fn.Run();
  CHECK_NEAR(x, 0.594322f, 1e-6);
  CHECK_EQ(y, 1);
}

}  // namespace

int main() {
  AddWithScalarAccessors();
  AddWithCallerBuffers();
  CondWithAPredicate();
  MatMulWithElementAccessors();
  MatMulWithCallerBuffers();
  MatMulAndAddWithNamedAccessors();
  SizesAndCounts();
  GatherWithVectors();
  VariableCarriesStateAcrossRuns();
  ReadonlyVariable();
  SequentialUpdatesInOwnBuffers();
  SequentialUpdatesInCallerBuffers();
  CHECK_EQ(AddInSecondTranslationUnit(40, 2), 42);
  if (failures != 0) {
    std::printf("%d checks failed\n", failures);
    return 1;
  }
  std::printf("all checks passed (C++ %ld)\n", static_cast<long>(__cplusplus));
  return 0;
}
