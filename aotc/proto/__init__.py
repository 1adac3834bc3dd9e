"""Generated protobuf modules for protos/ (run tools/gen_protos.py; do not edit by hand).

``aotc_tf_pb2`` holds aotc's GraphDef-compatible subset of TensorFlow's schema under the proto
package ``aotc.tf``.
"""
