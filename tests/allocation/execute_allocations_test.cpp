// SPDX-License-Identifier: Apache-2.0
// Plan::execute allocates nothing once it has run: every operator new in the process (the pool's
// workers included) is counted while a call runs.
//
// The layer is ResNet-50's 3×3 convolution, 64→64 channels, pad 1, at 14×14 instead of 56×56: the
// reference engine is slow, and the spatial size changes no allocation (the channels and kernel,
// which size every per-channel table, are the real ones).
#include <gtest/gtest.h>
#if QCONV_WITH_PTHREADPOOL
#include <pthreadpool.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "qconv/error.hpp"
#include "qconv/plan.hpp"

// This program is built on its own, without the tests' include directory.
#include "../support/random_bytes.hpp"

namespace {

std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void* allocate(std::size_t size, std::size_t alignment) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
  const std::size_t rounded =
      (std::max<std::size_t>(size, 1) + alignment - 1) / alignment * alignment;
  void* p = alignment <= alignof(std::max_align_t) ? std::malloc(rounded)
                                                   : std::aligned_alloc(alignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t size) { return allocate(size, alignof(std::max_align_t)); }
void* operator new[](std::size_t size) { return allocate(size, alignof(std::max_align_t)); }
void* operator new(std::size_t size, std::align_val_t a) {
  return allocate(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return allocate(size, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
// The non-throwing forms too (std::stable_sort's buffer): with the sanitizers' own, memory they
// allocated would be freed here.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size, alignof(std::max_align_t));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return allocate(size, static_cast<std::size_t>(a));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t& tag) noexcept {
  return operator new(size, a, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using qconv::DType;
using qconv::Layout;
using qconv::test::random_bytes;

constexpr std::int64_t kSize = 14;
constexpr std::int64_t kChannels = 64;

qconv::Problem resnet_3x3(bool has_bias) {
  qconv::ProblemDesc d;
  d.in_channels = d.out_channels = kChannels;
  d.in_height = d.in_width = kSize;
  d.kernel_h = d.kernel_w = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.input_scale = 0.02;
  d.input_zero_point = 0;
  d.weight_scale.assign(kChannels, 0.003);
  d.weight_zero_point = {0};
  d.output_scale = 0.04;
  d.scheme.kind = qconv::SchemeKind::fbgemm;
  d.activation = qconv::Activation::relu();
  d.has_bias = has_bias;
  return qconv::Problem(d);
}

// The thread counts the tests run with: a negative count stands for a host pool of that many
// threads (RunOptions::pool), made before counting starts, as a host's pool is.
auto thread_counts() {
#if QCONV_WITH_PTHREADPOOL
  return ::testing::Values(1, 2, -1, -2, -3);
#else
  return ::testing::Values(1, 2);
#endif
}

// The run options for a thread count of thread_counts(), with its host pool when negative.
class Threads {
 public:
  explicit Threads(int threads) {
    options_.threads = std::max(threads, 1);
#if QCONV_WITH_PTHREADPOOL
    if (threads < 0) pool_.reset(pthreadpool_create(static_cast<std::size_t>(-threads)));
    options_.pool = pool_.get();
#endif
  }
  const qconv::RunOptions& options() const { return options_; }

 private:
#if QCONV_WITH_PTHREADPOOL
  std::unique_ptr<pthreadpool, decltype(&pthreadpool_destroy)> pool_{nullptr, &pthreadpool_destroy};
#endif
  qconv::RunOptions options_;
};

// (with a bias, threads)
class ExecuteAllocations : public ::testing::TestWithParam<std::tuple<bool, int>> {};

TEST_P(ExecuteAllocations, NoneAfterTheFirstCall) {
  const auto [with_bias, threads] = GetParam();
  const Threads on(threads);
#if QCONV_WITH_PTHREADPOOL
  ASSERT_EQ(threads < 0, on.options().pool != nullptr);
#endif
  const qconv::Problem problem = resnet_3x3(with_bias);
  const auto weights = random_bytes(kChannels * 9 * kChannels, 1, 200);
  const auto plan = qconv::Plan::prepare(
      problem,
      {std::span<const std::uint8_t>(weights), DType::s8, Layout::OHWI, problem.weight_shape()});
  std::vector<float> bias_values(kChannels);
  for (std::size_t i = 0; i < bias_values.size(); ++i)
    bias_values[i] = 0.1f * static_cast<float>(i);
  const qconv::PreparedBias bias =
      with_bias ? plan.prepare_bias(std::span<const float>(bias_values)) : plan.prepare_bias({});

  const auto x = random_bytes(kSize * kSize * kChannels, 2, 200);
  std::vector<std::uint8_t> y(x.size());
  const qconv::ConstTensorView input(std::span<const std::uint8_t>(x), DType::u8, Layout::NHWC,
                                     {1, kSize, kSize, kChannels});
  const qconv::TensorView output(std::span<std::uint8_t>(y), DType::u8, Layout::NHWC,
                                 {1, kSize, kSize, kChannels});
  const qconv::RunOptions& options = on.options();

  plan.execute(input, output, bias, options);  // the first call may start the pool's workers
  const auto first = y;
  allocations = 0;
  counting = true;
  for (int call = 0; call < 3; ++call) plan.execute(input, output, bias, options);
  if (!with_bias) plan.execute(input, output, qconv::BiasView{}, options);  // the plain overload
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_EQ(y, first);

  // With a BiasView instead, the result is the same (and the per-channel constants are derived
  // again, which allocates: that is what prepare_bias saves).
  if (with_bias) {
    std::vector<std::uint8_t> again(y.size());
    plan.execute(
        input,
        {std::span<std::uint8_t>(again), DType::u8, Layout::NHWC, {1, kSize, kSize, kChannels}},
        std::span<const float>(bias_values), options);
    EXPECT_EQ(again, first);
  }
}

INSTANTIATE_TEST_SUITE_P(BiasAndThreads, ExecuteAllocations,
                         ::testing::Combine(::testing::Bool(), thread_counts()));

// Layers whose parallel bodies each use scratch of their own, with work for several threads: a
// depthwise 3x3 (interleaved input columns per body) and an s8 NCHW input to a 3x3 convolution
// (its copy made NHWC a block of rows per body), 64 channels at 56x56. On a host pool any of its
// threads, and on qconv's own pool a worker late to the first call, may take part first in a
// later call: the scratch must not be allocated per thread on first use.
class WorkerScratchAllocations : public ::testing::TestWithParam<std::tuple<bool, int>> {};

TEST_P(WorkerScratchAllocations, NoneAfterTheFirstCall) {
  const auto [depthwise, threads] = GetParam();
  const Threads on(threads);
#if QCONV_WITH_PTHREADPOOL
  ASSERT_EQ(threads < 0, on.options().pool != nullptr);
#endif
  constexpr std::int64_t kSide = 56, kDepth = 64;
  qconv::ProblemDesc d;
  d.in_channels = d.out_channels = kDepth;
  d.groups = depthwise ? kDepth : 1;
  d.in_height = d.in_width = kSide;
  d.kernel_h = d.kernel_w = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.input_dtype = depthwise ? DType::u8 : DType::s8;
  d.input_layout = depthwise ? Layout::NHWC : Layout::NCHW;
  d.input_scale = 0.02;
  d.weight_scale.assign(kDepth, 0.003);
  d.output_scale = 0.04;
  const qconv::Problem problem(d);
  const auto weights = random_bytes(kDepth * 9 * (kDepth / d.groups), 1, 200);
  const auto plan = qconv::Plan::prepare(
      problem,
      {std::span<const std::uint8_t>(weights), DType::s8, Layout::OHWI, problem.weight_shape()});
  const auto x = random_bytes(kSide * kSide * kDepth, 2, 200);
  std::vector<std::uint8_t> y(x.size());
  const qconv::ConstTensorView input(std::span<const std::uint8_t>(x), d.input_dtype,
                                     d.input_layout, problem.input_shape());
  const qconv::TensorView output(std::span<std::uint8_t>(y), DType::u8, Layout::NHWC,
                                 problem.output_shape());
  const qconv::RunOptions& options = on.options();
  plan.execute(input, output, {}, options);
  const auto first = y;
  allocations = 0;
  counting = true;
  for (int call = 0; call < 20; ++call) plan.execute(input, output, {}, options);
  counting = false;
  EXPECT_EQ(allocations.load(), 0) << plan.describe();
  EXPECT_EQ(y, first);
}

INSTANTIATE_TEST_SUITE_P(DepthwiseOrNchwAndThreads, WorkerScratchAllocations,
                         ::testing::Combine(::testing::Bool(), thread_counts()));

// The checks still run in full on the allocation-free path: a bad call gets the whole message.
TEST(ExecuteChecks, StillNameTheFieldValueAndRule) {
  const qconv::Problem problem = resnet_3x3(false);
  const auto weights = random_bytes(kChannels * 9 * kChannels, 1, 200);
  const auto plan = qconv::Plan::prepare(
      problem,
      {std::span<const std::uint8_t>(weights), DType::s8, Layout::OHWI, problem.weight_shape()});
  const auto x = random_bytes(kSize * kSize * kChannels, 2, 200);
  std::vector<std::uint8_t> y(x.size() * 2, 0xAB);
  const qconv::ConstTensorView input(std::span<const std::uint8_t>(x), DType::u8, Layout::NHWC,
                                     {1, kSize, kSize, kChannels});
  try {
    plan.execute(
        input,
        {std::span<std::uint8_t>(y), DType::u8, Layout::NHWC, {1, kSize, kSize + 1, kChannels}});
    ADD_FAILURE() << "a wrong output shape was accepted";
  } catch (const qconv::ShapeMismatch& e) {
    EXPECT_EQ(std::string(e.what()),
              "output.shape = [1, 14, 15, 64]: the problem needs [1, 14, 14, 64]");
  }
  try {
    plan.execute(
        input, {std::span<std::uint8_t>(y), DType::s8, Layout::NHWC, {1, kSize, kSize, kChannels}});
    ADD_FAILURE() << "a wrong output dtype was accepted";
  } catch (const qconv::ShapeMismatch& e) {
    EXPECT_EQ(std::string(e.what()), "output.dtype = s8: the problem needs u8");
  }
  try {
    plan.execute(
        input, {std::span<std::uint8_t>(y), DType::u8, Layout::NHWC, {1, kSize, kSize, kChannels}},
        qconv::BiasView{}, {1, 300});
    ADD_FAILURE() << "an input zero point of 300 was accepted";
  } catch (const qconv::InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "input_zero_point = 300: must lie in the range of u8");
  }
  EXPECT_EQ(y, std::vector<std::uint8_t>(y.size(), 0xAB));  // nothing written
  const auto other = qconv::Plan::prepare(
      problem,
      {std::span<const std::uint8_t>(weights), DType::s8, Layout::OHWI, problem.weight_shape()});
  EXPECT_THROW(
      plan.execute(
          input,
          {std::span<std::uint8_t>(y), DType::u8, Layout::NHWC, {1, kSize, kSize, kChannels}},
          other.prepare_bias({})),
      qconv::PreparedMismatch);
}

}  // namespace
