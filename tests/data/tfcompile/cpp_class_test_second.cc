// A second translation unit including the same class headers as cpp_class_test.cc: the
// header-only classes (and their shared base) must link into one program without clashes.
#include "test_graph_tfadd.hpp"
#include "test_graph_tfmatmul.hpp"

int AddInSecondTranslationUnit(int x, int y) {
  AddComp add;
  add.arg0() = x;
  add.arg1() = y;
  return add.Run() ? add.result0() : -1;
}
