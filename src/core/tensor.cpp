// SPDX-License-Identifier: Apache-2.0
#include "qconv/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

#include "core/allocation.hpp"
#include "core/check.hpp"

namespace qconv {

std::string to_string(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

std::int64_t element_count(const Shape& shape, std::string_view field) {
  std::int64_t count = 1;
  // The messages are built only on failure: views are made on every call of Plan::execute.
  for (std::int64_t d : shape) {
    if (d < 1) detail::fail(field, to_string(shape), "every dimension must be at least 1");
    if (count > std::numeric_limits<std::int64_t>::max() / 4 / d) {
      detail::fail(field, to_string(shape), "the tensor is too large to address");
    }
    count *= d;
  }
  return count;
}

namespace {

std::size_t rank_of(Layout layout) { return layout == Layout::X ? 1 : 4; }

}  // namespace

ConstTensorView::ConstTensorView(const void* data, std::size_t capacity_bytes, DType dtype,
                                 Layout layout, Shape shape)
    : data_(data),
      capacity_bytes_(capacity_bytes),
      dtype_(dtype),
      layout_(layout),
      shape_(std::move(shape)) {
  detail::require(data_ != nullptr, "tensor.data", "null", "a tensor view needs a buffer");
  if (shape_.size() != rank_of(layout_)) {
    detail::fail("tensor.shape", to_string(shape_),
                 "layout " + std::string(to_string(layout_)) + " needs " +
                     std::to_string(rank_of(layout_)) + " dimensions");
  }
  const auto needed =
      static_cast<std::size_t>(element_count(shape_, "tensor.shape")) * element_size(dtype_);
  if (capacity_bytes_ < needed) {
    detail::fail("tensor.capacity_bytes", capacity_bytes_,
                 "shape " + to_string(shape_) + " of " + std::string(to_string(dtype_)) +
                     " needs " + std::to_string(needed) + " bytes");
  }
}

std::int64_t ConstTensorView::elements() const {
  std::int64_t count = 1;
  for (std::int64_t d : shape_) count *= d;
  return shape_.empty() ? 0 : count;
}

TensorView::TensorView(void* data, std::size_t capacity_bytes, DType dtype, Layout layout,
                       Shape shape)
    : view_(data, capacity_bytes, dtype, layout, std::move(shape)) {}

void Tensor::Free::operator()(void* p) const { std::free(p); }

Tensor::Tensor(DType dtype, Layout layout, Shape shape)
    : dtype_(dtype), layout_(layout), shape_(std::move(shape)) {
  bytes_ = static_cast<std::size_t>(element_count(shape_, "tensor.shape")) * element_size(dtype_);
  const std::size_t rounded = (bytes_ + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) {
    throw detail::AllocationFailure("cannot allocate " + std::to_string(bytes_) +
                                    " bytes for a tensor of shape " + to_string(shape_) + " (" +
                                    std::string(to_string(dtype_)) + ")");
  }
  std::memset(p, 0, rounded);
  storage_.reset(p);
  (void)ConstTensorView(p, bytes_, dtype_, layout_, shape_);  // checks rank against layout
}

}  // namespace qconv
