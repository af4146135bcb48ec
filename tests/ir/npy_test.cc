// .npy round trip and the errors for files fusetune cannot read.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/npy.h"

namespace fusetune {
namespace {

std::string ErrorOf(const std::string& bytes) {
  try {
    ParseNpy(bytes, "t.npy");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// A hand-written version-1.0 file: magic, version, header length, header, data.
std::string Npy(const std::string& header, const std::string& data, int major = 1) {
  std::string h = header;
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  size_t len = h.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  if (major == 2) out += std::string(2, '\0');
  return out + h + data;
}

TEST(Npy, RoundTripsEveryDtype) {
  auto dir =
      std::filesystem::temp_directory_path() / ("fusetune_npy_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (DType d : {DType::kFloat32, DType::kInt32, DType::kBool}) {
    for (Shape s : {Shape{}, Shape{5}, Shape{2, 3, 4}, Shape{0, 3}}) {
      Tensor t = Tensor::Random(TensorType{d, s}, 3);
      std::string path = (dir / "t.npy").string();
      WriteNpy(path, t);
      Tensor back = ReadNpy(path);
      EXPECT_EQ(back.type(), t.type());
      EXPECT_EQ(MaxAbsDifference(back, t), 0.0);
      std::string bytes = SerializeNpy(t);
      // Header padded so data starts on a 64-byte boundary.
      EXPECT_EQ((bytes.size() - static_cast<size_t>(t.type().NumBytes())) % 64, 0u);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Npy, ReadsWhatNumpyWrites) {
  // numpy.save(np.array([[1.5, -2], [0, 3]], dtype=np.float32)) header, written by hand.
  float v[] = {1.5f, -2.f, 0.f, 3.f};
  std::string data(reinterpret_cast<const char*>(v), sizeof(v));
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  Tensor t = ParseNpy(Npy(header, data), "t.npy");
  EXPECT_EQ(t.type(), (TensorType{DType::kFloat32, {2, 2}}));
  EXPECT_EQ(t.Get(0), 1.5);
  EXPECT_EQ(t.Get(1), -2.0);
  EXPECT_EQ(t.Get(3), 3.0);
  // Version 2.0 and a 1-tuple shape.
  int32_t iv[] = {7, -8, 9};
  Tensor i = ParseNpy(Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }\n",
                          std::string(reinterpret_cast<const char*>(iv), sizeof(iv)), 2),
                      "t.npy");
  EXPECT_EQ(i.type(), (TensorType{DType::kInt32, {3}}));
  EXPECT_EQ(i.Get(1), -8.0);
}

TEST(Npy, RefusesWhatItCannotRead) {
  std::string f4(16, '\0');
  EXPECT_EQ(ErrorOf("hello"), "t.npy: not an .npy file (missing the \\x93NUMPY magic)");
  EXPECT_EQ(ErrorOf(Npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", f4)),
            "t.npy: Fortran-order .npy arrays are not supported; save with C order");
  EXPECT_EQ(ErrorOf(Npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }\n", f4)),
            "t.npy: big-endian npy data ('>f4') is not supported; save it little-endian");
  EXPECT_EQ(
      ErrorOf(Npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n", f4)),
      "t.npy: unsupported npy dtype '<f8' (supported: '<f4' float32, '<i4' int32, '|b1' bool)");
  EXPECT_EQ(ErrorOf(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", f4)),
            "t.npy: truncated .npy data: Tensor[(2, 3), float32] needs 24 bytes, the file has 16");
  EXPECT_EQ(
      ErrorOf(
          Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", f4).substr(0, 30)),
      "t.npy: truncated .npy header");
  EXPECT_EQ(ErrorOf(Npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }\n",
                        std::string("\x01\x05", 2))),
            "t.npy: bool .npy element 1 has value 5 (expected 0 or 1)");
  EXPECT_EQ(ErrorOf(Npy("{'fortran_order': False, 'shape': (2,), }\n", f4)),
            "t.npy: npy header has no 'descr' entry: {'fortran_order': False, 'shape': (2,), }\n");
  try {
    ReadNpy("/nonexistent/x.npy");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/x.npy: cannot open for reading");
  }
}

}  // namespace
}  // namespace fusetune
