# aotc.mk: compile TensorFlow models with aotc from a GNU Makefile.
#
#   include $(shell aotc --make-include)
#   $(eval $(call AOTC_MODEL,build/mlp,models/mlp.pb,models/mlp.yaml))
#   build/app: main.c build/mlp.h build/mlp.o    # main.c has #include "mlp.h"
#   	$(CC) -Ibuild main.c build/mlp.o -o $@
#
# $(call AOTC_MODEL,PREFIX,GRAPH[,CONFIG[,FLAGS]]) adds the rule that writes PREFIX.o and
# PREFIX.h from GRAPH (a GraphDef, SavedModel folder or HLO text) with aotc compile, and
# includes the dependency file PREFIX.d it writes: editing the graph, the config (CONFIG, or
# GRAPH's .yaml sibling), a SavedModel's variables or upgrading aotc recompiles the model;
# nothing else does. FLAGS are more aotc compile options, e.g. --target-cpu host; with
# --cpp-class ns::Name among them the rule also writes PREFIX.hpp, the C++ class.
#
# AOTC is the aotc command (default: aotc); AOTC_FLAGS go to every compile.
AOTC ?= aotc
AOTC_FLAGS ?=

# One compile writes both files: a grouped target (GNU make 4.3+); older makes see two targets
# with one recipe, which is still right (the outputs are deterministic and written atomically).
_AOTC_WRITES := $(if $(filter grouped-target,$(.FEATURES)),&:,:)

define AOTC_MODEL
$(1).o $(1).h $(if $(findstring --cpp-class,$(4)),$(1).hpp) $(_AOTC_WRITES) $(2) $(3)
	$$(AOTC) compile $(2) $(if $(3),-c $(3)) -o $(1) --depfile $(1).d -q $$(AOTC_FLAGS) $(4)
-include $(1).d
endef
