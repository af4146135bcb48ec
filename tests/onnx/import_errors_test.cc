// Every way an import fails names the node, its op and what to do, and returns no graph.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/onnx/onnx_import.h"
#include "model_builder.h"

namespace fusetune::testing {
namespace {

// The UserError message of importing `bytes`, or "" if it imported.
std::string ImportError(const std::string& bytes) {
  try {
    ImportOnnx(bytes, "model.onnx");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

std::string ImportError(const ModelBuilder& m) { return ImportError(m.Bytes()); }

void ExpectContains(const std::string& message, const std::vector<std::string>& parts) {
  ASSERT_FALSE(message.empty()) << "the import succeeded";
  for (const std::string& p : parts) EXPECT_NE(message.find(p), std::string::npos) << message;
}

TEST(OnnxImportErrors, UnsupportedOpNamesNodeOpAndWhatToDo) {
  ModelBuilder m;
  m.Input("x", {2}).Output("y");
  m.Node("Relu", {"x"}, {"r"});
  m.Node("NonMaxSuppression", {"r"}, {"y"}, "nms_1");
  ExpectContains(ImportError(m), {"model.onnx: node 1 'nms_1' (NonMaxSuppression)",
                                  "op NonMaxSuppression is not supported", "re-export",
                                  "Relay text", "Supported: ", "MatMul"});
}

TEST(OnnxImportErrors, CustomDomainOps) {
  ModelBuilder m;
  m.Input("x", {2}).Output("y");
  m.Node("FusedGelu", {"x"}, {"y"}).set_domain("com.microsoft");
  ExpectContains(ImportError(m), {"(com.microsoft.FusedGelu)", "domain 'com.microsoft'"});
}

TEST(OnnxImportErrors, DynamicInputDimension) {
  ModelBuilder m;
  m.DynamicInput("x", {1, 8}, 0, "batch").Output("y");
  m.Node("Relu", {"x"}, {"y"});
  ExpectContains(ImportError(m),
                 {"graph input 'x'", "dynamic dimension 'batch' at axis 0", "--dim NAME=SIZE"});
}

TEST(OnnxImportErrors, ShapeComputedAtRunTime) {
  ModelBuilder m;
  m.Input("x", {2, 3}).Input("shape", {2}, onnx::TensorProto::INT32).Output("y");
  m.Node("Reshape", {"x", "shape"}, {"y"}, "view");
  ExpectContains(ImportError(m), {"node 0 'view' (Reshape)", "the target shape",
                                  "computed at run time", "dynamic shape", "fixed input shapes"});
}

TEST(OnnxImportErrors, RunTimeGatherIndices) {
  ModelBuilder m;
  m.Input("table", {10, 4}).Input("ids", {3}, onnx::TensorProto::INT32).Output("y");
  m.Node("Gather", {"table", "ids"}, {"y"});
  ExpectContains(ImportError(m), {"(Gather)", "indices computed at run time"});
}

TEST(OnnxImportErrors, RunTimeComparison) {
  ModelBuilder m;
  m.Input("a", {2}).Input("b", {2}).TypedOutput("y", onnx::TensorProto::BOOL);
  m.Node("Equal", {"a", "b"}, {"y"});
  ExpectContains(ImportError(m), {"(Equal)", "computed at run time is not supported"});
}

TEST(OnnxImportErrors, Int64RunTimeInput) {
  ModelBuilder m;
  m.Input("ids", {3}, onnx::TensorProto::INT64).Output("y");
  m.Node("Identity", {"ids"}, {"y"});
  ExpectContains(ImportError(m), {"graph input 'ids'", "int64", "float, int32 or bool"});
}

TEST(OnnxImportErrors, NotAProtobuf) {
  ExpectContains(ImportError(std::string("fn (%x: Tensor[(2), float32]) { %x }")),
                 {"model.onnx: not an ONNX model"});
  ModelBuilder m;
  m.Input("x", {2}).Output("y");
  m.Initializer("w", {64}, std::vector<float>(64, 1.0f));
  m.Node("Add", {"x", "x"}, {"y"});
  std::string bytes = m.Bytes();
  ExpectContains(ImportError(bytes.substr(0, bytes.size() / 2)), {"not an ONNX model"});
}

TEST(OnnxImportErrors, UndefinedInput) {
  ModelBuilder m;
  m.Input("x", {2}).Output("y");
  m.Node("Add", {"x", "nowhere"}, {"y"});
  ExpectContains(ImportError(m), {"(Add)", "input 'nowhere' is not defined", "malformed"});
}

TEST(OnnxImportErrors, OutputNobodyProduces) {
  ModelBuilder m;
  m.Input("x", {2}).Output("ghost");
  ExpectContains(ImportError(m), {"graph output 'ghost' is produced by no node"});
}

TEST(OnnxImportErrors, DeclaredOutputShapeDisagrees) {
  ModelBuilder m;
  m.Input("x", {2, 3}).Output("y", {3, 2});
  m.Node("Relu", {"x"}, {"y"});
  ExpectContains(ImportError(m),
                 {"graph output 'y' is declared with shape (3, 2)", "computes (2, 3)"});
}

TEST(OnnxImportErrors, OpsetOutOfRange) {
  ModelBuilder m(6);
  m.Input("x", {2}).Output("y");
  m.Node("Relu", {"x"}, {"y"});
  ExpectContains(ImportError(m), {"opset 6 is not supported", "opset_version=13"});
}

TEST(OnnxImportErrors, ExternalData) {
  ModelBuilder m;
  m.Input("x", {2}).Output("y");
  onnx::TensorProto w = FloatTensor("w", {2}, {});
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  *m.model.mutable_graph()->add_initializer() = w;
  m.Node("Add", {"x", "w"}, {"y"});
  ExpectContains(ImportError(m), {"initialiser 'w'", "external file", "save_as_external_data"});
}

TEST(OnnxImportErrors, TruncatedTensorData) {
  ModelBuilder m;
  m.Input("x", {4}).Output("y");
  onnx::TensorProto w = FloatTensor("w", {4}, {1, 2, 3, 4});
  w.set_raw_data(std::string(6, '\0'));
  *m.model.mutable_graph()->add_initializer() = w;
  m.Node("Add", {"x", "w"}, {"y"});
  ExpectContains(ImportError(m), {"initialiser 'w'", "raw_data has 6 bytes", "need 16"});
}

TEST(OnnxImportErrors, TypeInferenceFailuresNameTheNode) {
  ModelBuilder m;
  m.Input("a", {2, 3}).Input("b", {4}).Output("y");
  m.Node("Add", {"a", "b"}, {"y"}, "residual");
  ExpectContains(ImportError(m), {"node 0 'residual' (Add)", "broadcast"});
}

TEST(OnnxImportErrors, MatMulReductionMismatch) {
  ModelBuilder m;
  m.Input("a", {2, 3}).Input("b", {4, 2}).Output("y");
  m.Node("MatMul", {"a", "b"}, {"y"});
  ExpectContains(ImportError(m), {"(MatMul)", "reduction dimensions differ"});
}

TEST(OnnxImportErrors, UnsupportedExtraOutputThatIsRead) {
  ModelBuilder m(13);
  m.Input("x", {2}).Output("y");
  m.Node("Dropout", {"x"}, {"d", "mask"});
  m.Node("Cast", {"mask"}, {"y"});
  ExpectContains(ImportError(m), {"(Dropout)", "output 1 ('mask') is read"});
}

TEST(OnnxImportErrors, ValueDefinedTwice) {
  ModelBuilder m;
  m.Input("x", {2}).Output("y");
  m.Node("Relu", {"x"}, {"y"});
  m.Node("Neg", {"x"}, {"y"});
  ExpectContains(ImportError(m), {"value 'y' is produced by nodes 0 and 1", "malformed"});
}

TEST(OnnxImportErrors, MissingFile) {
  try {
    ImportOnnxFile("/nonexistent/model.onnx");
    FAIL() << "imported a missing file";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read '/nonexistent/model.onnx'"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace fusetune::testing
