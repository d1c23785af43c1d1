// SPDX-License-Identifier: Apache-2.0
// The host's thread pool (RunOptions::pool, a pthreadpool_t): every engine gives the single-thread
// bytes on pools of 1, 2 and 3 threads, the work runs on the pool's threads and never on qconv's
// own pool, one pool serves several callers at once, and nested calls and exceptions behave as on
// qconv's pool. Named ThreadPool* so that scripts/test-tsan.sh runs them under ThreadSanitizer.
#include <gtest/gtest.h>
#include <pthreadpool.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/parallel.hpp"
#include "core/thread_pool.hpp"
#include "engines/engine.hpp"
#include "qconv/plan.hpp"
#include "support/random_problem.hpp"

namespace qconv {
namespace {

using test::RandomCase;
using test::RandomProblemOptions;
using test::Rng;

struct PoolDeleter {
  void operator()(pthreadpool* pool) const { pthreadpool_destroy(pool); }
};
using Pool = std::unique_ptr<pthreadpool, PoolDeleter>;

Pool make_pool(std::size_t threads) {
  Pool pool(pthreadpool_create(threads));
  if (!pool) throw std::runtime_error("pthreadpool_create failed");
  return pool;
}

std::vector<std::uint8_t> run(const RandomCase& rc, const Plan& plan, RunOptions options) {
  const Problem& p = plan.problem();
  Tensor out(p.desc().output_dtype, p.desc().output_layout, p.output_shape(rc.desc.batch));
  plan.execute(rc.input_view(), out.view(), rc.bias(), options);
  const auto* bytes = static_cast<const std::uint8_t*>(out.view().data());
  return {bytes, bytes + out.view().bytes()};
}

RunOptions on_pool(pthreadpool_t pool) {
  RunOptions options;
  options.pool = pool;
  return options;
}

// NHWC and NCHW convolutions, some transposed, grouped or depthwise, large enough for several
// tiles per thread.
std::vector<RandomCase> cases() {
  Rng rng(20261201);
  std::vector<RandomCase> all;
  for (int i = 0; i < 24; ++i) {
    RandomProblemOptions opt;
    opt.op = i % 4 == 3 ? OpKind::conv2d_transpose : OpKind::conv2d;
    opt.input_layout = opt.output_layout = i % 6 == 5 ? Layout::NCHW : Layout::NHWC;
    opt.depthwise = i % 5 == 4;
    opt.max_groups = i % 3 == 0 ? 4 : 1;
    opt.max_channels_per_group = 40;
    opt.max_kernel = 3;
    opt.max_extent = 14;
    opt.max_batch = 2;
    all.push_back(test::random_case(rng, opt));
  }
  return all;
}

bool runs_here(const detail::Engine& engine) {
  return (engine.required_cpu_features() & ~detail::host_cpu_features()) == 0;
}

TEST(ThreadPoolHost, EveryEngineGivesTheSingleThreadBytesOnPoolsOf1To3Threads) {
  const Pool pools[] = {make_pool(1), make_pool(2), make_pool(3)};
  for (const detail::Engine* engine : detail::all_engines()) {
    if (!runs_here(*engine)) continue;
    int ran = 0;
    for (const RandomCase& rc : cases()) {
      const Problem problem(rc.desc);
      if (!engine->unsupported_reason(problem).empty()) continue;
      const Plan plan =
          Plan::prepare(problem, rc.weight_view(), PrepareOptions{std::string(engine->name())});
      const auto single = run(rc, plan, {});
      for (const Pool& pool : pools) {
        ASSERT_EQ(run(rc, plan, on_pool(pool.get())), single)
            << engine->name() << " on a pool of " << pthreadpool_get_threads_count(pool.get())
            << " threads: " << problem.summary();
      }
      ++ran;
    }
    EXPECT_GT(ran, 0) << engine->name() << " took none of the problems";
  }
}

// A problem that qconv's own pool shares among its workers (the control), and that a host pool
// runs without it.
TEST(ThreadPoolHost, AHostPoolCallNeverWakesQconvsPool) {
  Rng rng(5);
  ProblemDesc d;
  d.batch = 2;
  d.in_channels = d.out_channels = 16;
  d.in_height = d.in_width = 12;
  d.kernel_h = d.kernel_w = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.output_scale = 40.0;
  d.scheme.kind = SchemeKind::fbgemm;
  const RandomCase rc = test::random_case_for(rng, d);
  const Plan plan = Plan::prepare(Problem(rc.desc), rc.weight_view());
  detail::ThreadPool& own = detail::ThreadPool::instance();

  RunOptions three;
  three.threads = 3;
  const std::int64_t before_control = own.shared_calls();
  const auto expected = run(rc, plan, three);
  EXPECT_GT(own.shared_calls(), before_control) << "the control call did not use qconv's pool";

  const Pool pool = make_pool(3);
  RunOptions both = on_pool(pool.get());
  both.threads = 3;  // not read: the pool decides
  const std::int64_t before = own.shared_calls();
  EXPECT_EQ(run(rc, plan, both), expected);
  EXPECT_EQ(own.shared_calls(), before);
}

// The threads that run parallel_for's chunks under a HostPoolScope are the pool's own: the same
// set that pthreadpool itself uses for a call of its own, the caller among them. Each chunk waits
// until all three threads have arrived, so that none can take over another's chunks.
TEST(ThreadPoolHost, ChunksRunOnThePoolsThreads) {
  const Pool pool = make_pool(3);
  struct Seen {
    std::mutex mutex;
    std::condition_variable arrived;
    std::set<std::thread::id> ids;
    void arrive() {
      std::unique_lock lock(mutex);
      ids.insert(std::this_thread::get_id());
      arrived.notify_all();
      arrived.wait_for(lock, std::chrono::seconds(10), [this] { return ids.size() >= 3; });
    }
  };
  Seen direct;
  // `published` and `done` make the hand-overs visible to ThreadSanitizer, which does not see
  // inside pthreadpool (run_on_host_pool does the same).
  struct DirectContext {
    Seen* seen;
    std::atomic<bool> published{false};
    std::atomic<int> done{0};
  } direct_context{&direct};
  direct_context.published.store(true, std::memory_order_release);
  pthreadpool_parallelize_1d(
      pool.get(),
      [](void* c, std::size_t) {
        auto& context = *static_cast<DirectContext*>(c);
        (void)context.published.load(std::memory_order_acquire);
        context.seen->arrive();
        context.done.fetch_add(1, std::memory_order_release);
      },
      &direct_context, 12, 0);
  EXPECT_EQ(direct_context.done.load(std::memory_order_acquire), 12);

  Seen through_qconv;
  const std::int64_t before = detail::ThreadPool::instance().shared_calls();
  {
    const detail::HostPoolScope scope(pool.get());
    detail::parallel_for(8, 12, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) through_qconv.arrive();
    });
  }
  EXPECT_EQ(detail::ThreadPool::instance().shared_calls(), before);
  EXPECT_EQ(direct.ids.size(), 3u);
  EXPECT_EQ(through_qconv.ids, direct.ids);
  EXPECT_EQ(through_qconv.ids.count(std::this_thread::get_id()), 1u);
}

TEST(ThreadPoolHost, CallersShareOnePool) {
  const Pool pool = make_pool(3);
  const std::vector<RandomCase> all = cases();
  constexpr std::size_t kCallers = 4;
  std::vector<Plan> plans;
  std::vector<std::vector<std::uint8_t>> expected;
  for (std::size_t c = 0; c < kCallers; ++c) {
    const RandomCase& rc = all[c * 3];
    plans.push_back(Plan::prepare(Problem(rc.desc), rc.weight_view()));
    expected.push_back(run(rc, plans.back(), {}));
  }
  std::vector<int> mismatches(kCallers, 0);
  {
    std::vector<std::jthread> callers;
    for (std::size_t c = 0; c < kCallers; ++c) {
      callers.emplace_back([&, c] {
        for (int round = 0; round < 4; ++round) {
          if (run(all[c * 3], plans[c], on_pool(pool.get())) != expected[c]) ++mismatches[c];
        }
      });
    }
  }
  for (std::size_t c = 0; c < kCallers; ++c) EXPECT_EQ(mismatches[c], 0) << c;
}

TEST(ThreadPoolHost, NestedCallsRunWhereTheyAreMade) {
  const Pool pool = make_pool(3);
  const detail::HostPoolScope scope(pool.get());
  std::vector<std::atomic<int>> visits(40 * 30);
  detail::parallel_for(4, 40, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t outer = begin; outer < end; ++outer) {
      const std::thread::id here = std::this_thread::get_id();
      detail::parallel_for(3, 30, [&](std::int64_t b, std::int64_t e) {
        EXPECT_EQ(std::this_thread::get_id(), here);
        for (std::int64_t inner = b; inner < e; ++inner) {
          ++visits[static_cast<std::size_t>(outer * 30 + inner)];
        }
      });
    }
  });
  for (const auto& v : visits) EXPECT_EQ(v.load(), 1);
}

TEST(ThreadPoolHost, AnExceptionReachesTheCallerAndThePoolStaysUsable) {
  const Pool pool = make_pool(3);
  const detail::HostPoolScope scope(pool.get());
  std::atomic<int> calls{0};
  EXPECT_THROW(detail::parallel_for(1, 1000,
                                    [&](std::int64_t begin, std::int64_t) {
                                      ++calls;
                                      if (begin == 0) throw std::runtime_error("tile 0 failed");
                                    }),
               std::runtime_error);
  EXPECT_GE(calls.load(), 1);
  std::atomic<std::int64_t> sum{0};
  detail::parallel_for(1, 1000, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

}  // namespace
}  // namespace qconv
