"""aotc_library: a TensorFlow model compiled ahead of time by aotc, as a cc_library.

    load("@aotc//:aotc.bzl", "aotc_library")

    aotc_library(
        name = "mlp",                # the library; its header is "<package>/mlp.h"
        graph = "mlp.pb",            # GraphDef or HLO text; or a filegroup of a SavedModel
        config = "mlp.yaml",         # optional; YAML or tfcompile's .config.pbtxt
        cpp_class = "ns::Mlp",       # optional: also "<package>/mlp.hpp", tfcompile's class
    )
    cc_binary(name = "app", srcs = ["app.c"], deps = [":mlp"])

The compile is one hermetic action: its inputs are the graph, the config and aotc itself
(see configure.bzl); it never reads aotc's own cache nor files it was not given (without a
config it gets an empty one, not the graph's .yaml sibling), and the target is explicit: the
triple follows the C++ toolchain the object is linked with, and without target_cpu the object is
aotc's portable default (x86-64: kernels for several cpu levels, one picked at run time), so it
does not depend on the machine that happens to run the action. Equal inputs give
byte-identical outputs, so Bazel's disk and remote caches and remote execution work unchanged.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

# Bazel C++ toolchain cpu values -> LLVM triples.
_TRIPLES = {
    "k8": "x86_64-unknown-linux-gnu",
    "x86_64": "x86_64-unknown-linux-gnu",
    "aarch64": "aarch64-unknown-linux-gnu",
    "arm64": "aarch64-unknown-linux-gnu",
    "armv7": "armv7-unknown-linux-gnueabihf",
    "ppc": "powerpc64le-unknown-linux-gnu",
    "s390x": "s390x-unknown-linux-gnu",
    "riscv64": "riscv64-unknown-linux-gnu",
    "darwin": "x86_64-apple-macosx",
    "darwin_x86_64": "x86_64-apple-macosx",
    "darwin_arm64": "arm64-apple-macosx",
    "x64_windows": "x86_64-pc-windows-msvc",
}

def _triple(ctx):
    if ctx.attr.target_triple:
        return ctx.attr.target_triple
    cpu = find_cpp_toolchain(ctx).cpu
    if cpu not in _TRIPLES:
        fail("aotc_library %s: no LLVM triple known for the C++ toolchain cpu %r; set target_triple" % (ctx.label, cpu))
    return _TRIPLES[cpu]

def _model_path(ctx):
    """The graph file, or the folder of a SavedModel given as its files."""
    files = ctx.files.graph
    for f in files:
        if f.basename in ("saved_model.pb", "saved_model.pbtxt"):
            return f.dirname
    if len(files) != 1:
        fail("aotc_library %s: graph must be one file, or the files of a SavedModel (saved_model.pb and variables/)" % ctx.label)
    return files[0].path

def _aotc_compile_impl(ctx):
    config = ctx.file.config
    if config == None:  # an empty config: defaults, never an undeclared .yaml sibling
        config = ctx.actions.declare_file(ctx.label.name + ".empty.yaml")
        ctx.actions.write(config, "")
    prefix = ctx.outputs.object.path[:-len(".o")]
    outputs = [ctx.outputs.object, ctx.outputs.header]
    if ctx.outputs.header.path != prefix + ".h":
        fail("aotc_library %s: object and header must have the same stem" % ctx.label)
    if bool(ctx.attr.cpp_class) != bool(ctx.outputs.cpp_header):
        fail("aotc_library %s: cpp_class and cpp_header go together" % ctx.label)
    if ctx.outputs.cpp_header:
        if ctx.outputs.cpp_header.path != prefix + ".hpp":
            fail("aotc_library %s: object and C++ header must have the same stem" % ctx.label)
        outputs.append(ctx.outputs.cpp_header)
    args = ctx.actions.args()
    args.add_all(["compile", _model_path(ctx), "-c", config, "-o", prefix, "--no-cache", "-q"])
    args.add_all(["--target-triple", _triple(ctx)])
    if ctx.attr.target_cpu:
        args.add("--target-cpu", ctx.attr.target_cpu)
    if ctx.attr.target_features:
        args.add("--target-features", ctx.attr.target_features)
    if ctx.attr.c_name:
        args.add("--name", ctx.attr.c_name)
    if ctx.attr.cpp_class:
        args.add("--cpp-class", ctx.attr.cpp_class)
    args.add_all(ctx.attr.aotc_args)
    ctx.actions.run(
        executable = ctx.executable._aotc,
        arguments = [args],
        inputs = ctx.files.graph + [config],
        tools = ctx.files._aotc_sources,
        outputs = outputs,
        mnemonic = "AotcCompile",
        progress_message = "aotc: compiling %s" % ctx.label,
    )

aotc_compile = rule(
    implementation = _aotc_compile_impl,
    attrs = {
        "graph": attr.label(allow_files = True, mandatory = True),
        "config": attr.label(allow_single_file = [".yaml", ".yml", ".pbtxt", ".pb"]),
        "object": attr.output(mandatory = True),
        "header": attr.output(mandatory = True),
        "cpp_header": attr.output(),
        "c_name": attr.string(),
        "cpp_class": attr.string(),
        "target_triple": attr.string(),
        "target_cpu": attr.string(),
        "target_features": attr.string(),
        "aotc_args": attr.string_list(),
        "_aotc": attr.label(
            default = "@aotc_compiler//:aotc",
            executable = True,
            allow_single_file = True,
            cfg = "exec",
        ),
        "_aotc_sources": attr.label(default = "@aotc_compiler//:sources", cfg = "exec"),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
)

def aotc_library(
        name,
        graph,
        config = None,
        c_name = None,
        cpp_class = None,
        target_triple = None,
        target_cpu = None,
        target_features = None,
        aotc_args = [],
        **kwargs):
    """A cc_library `name` with the compiled model: `name`.o and the header `name`.h.

    config is aotc's YAML or a tfcompile config (*.config.pbtxt, *.config.pb). cpp_class
    ("ns::Name", as tf_library's) adds `name`.hpp, a header-only C++ class shaped like the one
    tfcompile generates. c_name sets the C identifier prefix (default: the config's name:,
    else the graph's stem);
    target_cpu "host" would tie the object to the machine running the action. Other keyword
    arguments (visibility, tags, ...) go to the cc_library.
    """
    aotc_compile(
        name = name + "_aotc",
        graph = graph,
        config = config,
        object = name + ".o",
        header = name + ".h",
        cpp_header = name + ".hpp" if cpp_class else None,
        c_name = c_name,
        cpp_class = cpp_class,
        target_triple = target_triple,
        target_cpu = target_cpu,
        target_features = target_features,
        aotc_args = aotc_args,
        visibility = ["//visibility:private"],
    )
    native.cc_library(
        name = name,
        srcs = [name + ".o"],
        hdrs = [name + ".h"] + ([name + ".hpp"] if cpp_class else []),
        linkstatic = True,
        **kwargs
    )
