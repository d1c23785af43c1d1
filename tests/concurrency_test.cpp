// SPDX-License-Identifier: Apache-2.0
// One Plan shared by many threads, and the thread pool used by many callers at once. Run under
// ThreadSanitizer by scripts/test-tsan.sh.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#if defined(__linux__)
#include <sched.h>
#endif
#include <thread>
#include <tuple>
#include <vector>

#include "core/cpu_placement.hpp"
#include "core/parallel.hpp"
#include "core/thread_pool.hpp"
#include "qconv/plan.hpp"
#include "support/random_bytes.hpp"

namespace {

using qconv::DType;
using qconv::Layout;
using qconv::test::random_bytes;

// 3×3, 16→16 channels, 12×12, per-channel weights, fbgemm with a float bias and ReLU.
qconv::Problem shared_problem() {
  qconv::ProblemDesc d;
  d.in_channels = d.out_channels = 16;
  d.in_height = d.in_width = 12;
  d.kernel_h = d.kernel_w = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.input_zero_point = 12;
  d.input_scale = 0.02;
  d.weight_scale.assign(16, 0.0);
  for (int o = 0; o < 16; ++o) d.weight_scale[static_cast<std::size_t>(o)] = 0.001 * (o + 1);
  d.output_scale = 0.05;
  d.output_zero_point = 3;
  d.scheme.kind = qconv::SchemeKind::fbgemm;
  d.activation = qconv::Activation::relu();
  d.has_bias = true;
  return qconv::Problem(d);
}

struct Fixture {
  qconv::Problem problem = shared_problem();
  std::vector<std::uint8_t> weights = random_bytes(16 * 9 * 16, 5);
  qconv::Plan plan = qconv::Plan::prepare(
      problem,
      {std::span<const std::uint8_t>(weights), DType::s8, Layout::OHWI, problem.weight_shape()});
  std::vector<float> bias = [] {
    std::vector<float> b(16);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.25f * static_cast<float>(i) - 2.0f;
    return b;
  }();

  std::vector<std::uint8_t> input(unsigned seed) const { return random_bytes(12 * 12 * 16, seed); }
  std::vector<std::uint8_t> run(const std::vector<std::uint8_t>& x, int threads) const {
    std::vector<std::uint8_t> y(12 * 12 * 16, 0);
    plan.execute({std::span<const std::uint8_t>(x), DType::u8, Layout::NHWC, {1, 12, 12, 16}},
                 {std::span<std::uint8_t>(y), DType::u8, Layout::NHWC, {1, 12, 12, 16}},
                 std::span<const float>(bias), {threads, std::nullopt});
    return y;
  }
};

TEST(Concurrency, OnePlanEightThreadsMatchTheSingleThreadedRun) {
  const Fixture f;
  constexpr int kCallers = 8;
  std::vector<std::vector<std::uint8_t>> inputs;
  std::vector<std::vector<std::uint8_t>> expected;
  for (int t = 0; t < kCallers; ++t) {
    inputs.push_back(f.input(100 + static_cast<unsigned>(t)));
    expected.push_back(f.run(inputs.back(), 1));
  }
  std::vector<std::vector<std::uint8_t>> results(kCallers);
  std::vector<int> mismatches(kCallers, 0);
  {
    std::vector<std::jthread> callers;
    for (int t = 0; t < kCallers; ++t) {
      callers.emplace_back([&, t] {
        const auto i = static_cast<std::size_t>(t);
        for (int round = 0; round < 4; ++round) {
          // Callers also ask the shared pool for help, with different thread counts.
          results[i] = f.run(inputs[i], 1 + (t + round) % 3);
          if (results[i] != expected[i]) ++mismatches[i];
        }
      });
    }
  }
  for (int t = 0; t < kCallers; ++t) EXPECT_EQ(mismatches[static_cast<std::size_t>(t)], 0) << t;
  EXPECT_NE(expected[0], expected[1]);  // the inputs differ, so a mix-up would show
}

// The fast engines' copies (an s8 input moved to u8, NCHW made NHWC and back, the padding filled
// on AMX) live in per-thread scratch: callers running one plan at once must not see each other's.
TEST(Concurrency, CallersKeepTheirOwnScratchCopies) {
  qconv::ProblemDesc d;
  d.in_channels = d.out_channels = 64;
  d.in_height = 10;
  d.in_width = 20;
  d.kernel_h = d.kernel_w = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.input_dtype = DType::s8;
  d.input_layout = d.output_layout = Layout::NCHW;
  d.input_zero_point = -3;
  d.output_scale = 40.0;
  d.scheme.kind = qconv::SchemeKind::fbgemm;
  const qconv::Problem problem(d);
  const auto weights = random_bytes(64 * 9 * 64, 11);
  const qconv::Plan plan = qconv::Plan::prepare(
      problem,
      {std::span<const std::uint8_t>(weights), DType::s8, Layout::OHWI, problem.weight_shape()});
  const auto run = [&](const std::vector<std::uint8_t>& x, int threads) {
    std::vector<std::uint8_t> y(64 * 10 * 20);
    plan.execute({std::span<const std::uint8_t>(x), DType::s8, Layout::NCHW, {1, 64, 10, 20}},
                 {std::span<std::uint8_t>(y), DType::u8, Layout::NCHW, {1, 64, 10, 20}}, {},
                 {threads, std::nullopt});
    return y;
  };
  constexpr int kCallers = 6;
  std::vector<std::vector<std::uint8_t>> inputs, expected;
  for (int t = 0; t < kCallers; ++t) {
    inputs.push_back(random_bytes(64 * 10 * 20, 300 + static_cast<unsigned>(t)));
    expected.push_back(run(inputs.back(), 1));
  }
  std::vector<int> mismatches(kCallers, 0);
  {
    std::vector<std::jthread> callers;
    for (int t = 0; t < kCallers; ++t) {
      callers.emplace_back([&, t] {
        const auto i = static_cast<std::size_t>(t);
        for (int round = 0; round < 3; ++round) {
          if (run(inputs[i], 1 + (t + round) % 3) != expected[i]) ++mismatches[i];
        }
      });
    }
  }
  for (int t = 0; t < kCallers; ++t) EXPECT_EQ(mismatches[static_cast<std::size_t>(t)], 0) << t;
  EXPECT_NE(expected[0], expected[1]);
}

TEST(Concurrency, ResultsDoNotDependOnTheThreadCount) {
  const Fixture f;
  const auto x = f.input(7);
  const auto one = f.run(x, 1);
  for (int threads : {2, 3, 5, 16, 0}) EXPECT_EQ(f.run(x, threads), one) << threads;
}

TEST(Concurrency, APreparedBiasIsSharedBetweenThreads) {
  const Fixture f;
  const qconv::PreparedBias bias = f.plan.prepare_bias(std::span<const float>(f.bias));
  const auto x = f.input(11);
  const auto expected = f.run(x, 1);
  std::atomic<int> mismatches{0};
  {
    std::vector<std::jthread> callers;
    for (int t = 0; t < 4; ++t) {
      callers.emplace_back([&, t] {
        std::vector<std::uint8_t> y(expected.size());
        f.plan.execute({std::span<const std::uint8_t>(x), DType::u8, Layout::NHWC, {1, 12, 12, 16}},
                       {std::span<std::uint8_t>(y), DType::u8, Layout::NHWC, {1, 12, 12, 16}}, bias,
                       {1 + t % 2, std::nullopt});
        if (y != expected) ++mismatches;
      });
    }
  }
  EXPECT_EQ(mismatches.load(), 0);
}

// Every index of every call is visited exactly once, whoever runs it.
TEST(ThreadPool, ManyCallersAtOnce) {
  constexpr int kCallers = 6;
  std::vector<int> failures(kCallers, 0);
  {
    std::vector<std::jthread> callers;
    for (int c = 0; c < kCallers; ++c) {
      callers.emplace_back([&, c] {
        for (int round = 0; round < 200; ++round) {
          const std::int64_t count = 1 + (round * 37 + c * 11) % 300;
          std::vector<int> visits(static_cast<std::size_t>(count), 0);
          qconv::detail::parallel_for(1 + (round + c) % 4, count,
                                      [&](std::int64_t begin, std::int64_t end) {
                                        for (std::int64_t i = begin; i < end; ++i) {
                                          ++visits[static_cast<std::size_t>(i)];
                                        }
                                      });
          for (int v : visits) failures[static_cast<std::size_t>(c)] += v != 1;
        }
      });
    }
  }
  for (int f : failures) EXPECT_EQ(f, 0);
}

TEST(ThreadPool, NestedCallsDoNotDeadlock) {
  std::vector<std::atomic<int>> visits(64 * 50);
  qconv::detail::parallel_for(4, 64, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t outer = begin; outer < end; ++outer) {
      qconv::detail::parallel_for(3, 50, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t inner = b; inner < e; ++inner) {
          ++visits[static_cast<std::size_t>(outer * 50 + inner)];
        }
      });
    }
  });
  for (const auto& v : visits) EXPECT_EQ(v.load(), 1);
}

TEST(ThreadPool, AnExceptionReachesTheCallerAndThePoolStaysUsable) {
  qconv::detail::ThreadPool pool;
  struct Context {
    std::atomic<int> calls{0};
  } context;
  const auto throwing = [](const void* c, std::int64_t begin, std::int64_t) {
    ++static_cast<Context*>(const_cast<void*>(c))->calls;
    if (begin == 0) throw std::runtime_error("chunk 0 failed");
  };
  EXPECT_THROW(pool.run(3, 1000, throwing, &context), std::runtime_error);
  std::atomic<std::int64_t> sum{0};
  const auto adding = [](const void* c, std::int64_t begin, std::int64_t end) {
    auto& s = *static_cast<std::atomic<std::int64_t>*>(const_cast<void*>(c));
    for (std::int64_t i = begin; i < end; ++i) s += i;
  };
  pool.run(3, 1000, adding, &sum);
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
  EXPECT_EQ(pool.workers(), 2);  // grown to the largest request, no further
}

TEST(ThreadPool, CutsTheRangeIntoTheChunksAskedFor) {
  qconv::detail::ThreadPool pool;
  struct Context {
    std::atomic<int> calls{0};
    std::vector<std::atomic<int>> visits = std::vector<std::atomic<int>>(1000);
  };
  const auto visiting = [](const void* c, std::int64_t begin, std::int64_t end) {
    auto& context = *static_cast<Context*>(const_cast<void*>(c));
    ++context.calls;
    for (std::int64_t i = begin; i < end; ++i) ++context.visits[static_cast<std::size_t>(i)];
  };
  // One chunk per thread for a short call, the default few, and never more than the range has.
  for (const auto& [threads, count, per_thread, chunks] :
       {std::tuple{3, 1000, 1, 3}, std::tuple{3, 1000, 4, 12}, std::tuple{2, 5, 4, 5}}) {
    Context context;
    pool.run(threads, count, visiting, &context, per_thread);
    EXPECT_EQ(context.calls.load(), chunks) << threads << " threads, " << per_thread << " a thread";
    for (std::int64_t i = 0; i < 1000; ++i) {
      EXPECT_EQ(context.visits[static_cast<std::size_t>(i)].load(), i < count ? 1 : 0) << i;
    }
  }
}

#if defined(__linux__)
// The pool's helpers leave their caller's CPU (thread_pool.cpp): move_off_cpu puts the thread on
// another CPU it may use and gives it back the CPUs it had, and changes nothing for a thread that
// may use that CPU alone.
TEST(ThreadPoolCpuPlacement, MovesAThreadOffItsCpuAndKeepsItsMask) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  if (CPU_COUNT(&before) < 2) GTEST_SKIP() << "needs a process that may run on 2 CPUs or more";
  std::jthread([&] {
    const int cpu = qconv::detail::current_cpu();
    ASSERT_GE(cpu, 0);
    EXPECT_TRUE(qconv::detail::move_off_cpu(cpu));
    EXPECT_NE(qconv::detail::current_cpu(), cpu);
    cpu_set_t after;
    ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
    EXPECT_TRUE(CPU_EQUAL(&after, &before));
  });
  std::jthread([&] {  // pinned to one CPU: nowhere to go
    const int cpu = qconv::detail::current_cpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    EXPECT_FALSE(qconv::detail::move_off_cpu(cpu));
    EXPECT_EQ(qconv::detail::current_cpu(), cpu);
    cpu_set_t after;
    ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
    EXPECT_TRUE(CPU_EQUAL(&after, &one));
  });
}
#endif

}  // namespace
