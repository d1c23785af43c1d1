// SPDX-License-Identifier: Apache-2.0
// Tensors: non-owning views that carry dtype, layout and shape and are checked against the size of
// the buffer they point into, and an owning, 64-byte-aligned tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qconv/types.hpp"

namespace qconv {

using Shape = std::vector<std::int64_t>;

std::string to_string(const Shape& shape);

// Number of elements of a shape; throws InvalidArgument (naming `field`) for a dimension below 1
// or a product that does not fit in memory.
std::int64_t element_count(const Shape& shape, std::string_view field);

// A read-only view. The shape lists dimensions in the order the layout names them
// (NHWC: {N, H, W, C}); a bias vector has layout X and a one-element shape.
class ConstTensorView {
 public:
  ConstTensorView() = default;
  // Throws InvalidArgument when the buffer is null, the shape has a dimension below 1, the rank
  // disagrees with the layout, or `capacity_bytes` is smaller than the shape needs.
  ConstTensorView(const void* data, std::size_t capacity_bytes, DType dtype, Layout layout,
                  Shape shape);

  template <class T>
  ConstTensorView(std::span<const T> values, DType dtype, Layout layout, Shape shape)
      : ConstTensorView(values.data(), values.size_bytes(), dtype, layout, std::move(shape)) {}

  const void* data() const { return data_; }
  std::size_t capacity_bytes() const { return capacity_bytes_; }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::int64_t elements() const;
  std::size_t bytes() const { return static_cast<std::size_t>(elements()) * element_size(dtype_); }
  bool empty() const { return data_ == nullptr; }

  template <class T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }

 private:
  const void* data_ = nullptr;
  std::size_t capacity_bytes_ = 0;
  DType dtype_ = DType::u8;
  Layout layout_ = Layout::NHWC;
  Shape shape_;
};

// A writable view; converts to a ConstTensorView.
class TensorView {
 public:
  TensorView() = default;
  TensorView(void* data, std::size_t capacity_bytes, DType dtype, Layout layout, Shape shape);

  template <class T>
  TensorView(std::span<T> values, DType dtype, Layout layout, Shape shape)
      : TensorView(values.data(), values.size_bytes(), dtype, layout, std::move(shape)) {}

  operator ConstTensorView() const { return view_; }  // NOLINT(google-explicit-constructor)

  void* data() const { return const_cast<void*>(view_.data()); }
  std::size_t capacity_bytes() const { return view_.capacity_bytes(); }
  DType dtype() const { return view_.dtype(); }
  Layout layout() const { return view_.layout(); }
  const Shape& shape() const { return view_.shape(); }
  std::int64_t dim(std::size_t i) const { return view_.dim(i); }
  std::int64_t elements() const { return view_.elements(); }
  std::size_t bytes() const { return view_.bytes(); }
  bool empty() const { return view_.empty(); }

  template <class T>
  T* as() const {
    return static_cast<T*>(data());
  }

 private:
  ConstTensorView view_;
};

// An owning tensor whose storage is 64-byte aligned and zero-initialised.
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Layout layout, Shape shape);

  TensorView view() { return {storage_.get(), bytes_, dtype_, layout_, shape_}; }
  ConstTensorView view() const { return {storage_.get(), bytes_, dtype_, layout_, shape_}; }
  operator ConstTensorView() const { return view(); }  // NOLINT(google-explicit-constructor)
  operator TensorView() { return view(); }             // NOLINT(google-explicit-constructor)

  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }
  DType dtype() const { return dtype_; }
  Layout layout() const { return layout_; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t bytes() const { return bytes_; }
  std::int64_t elements() const { return view().elements(); }

  template <class T>
  T* as() {
    return static_cast<T*>(data());
  }
  template <class T>
  const T* as() const {
    return static_cast<const T*>(data());
  }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> storage_;
  std::size_t bytes_ = 0;
  DType dtype_ = DType::u8;
  Layout layout_ = Layout::NHWC;
  Shape shape_;
};

}  // namespace qconv
