// SPDX-License-Identifier: Apache-2.0
#include "onednn_peer.hpp"

#include <chrono>
#include <stdexcept>
#include <vector>

#if defined(QCONV_BENCH_WITH_ONEDNN)
#include <omp.h>

#include <dnnl.hpp>
#endif

namespace qconv::bench {

#if defined(QCONV_BENCH_WITH_ONEDNN)
namespace {

using dnnl::memory;

class OnednnConvolution final : public Peer {
 public:
  OnednnConvolution(const Problem& problem, int threads) : threads_(threads) {
    omp_set_num_threads(threads_);
    const auto started = std::chrono::steady_clock::now();
    const ProblemDesc& d = problem.desc();
    const memory::dim n = d.batch, c = d.in_channels, o = d.out_channels, g = d.groups;
    const memory::dims src_dims{n, c, d.in_height, d.in_width};
    const memory::dims dst_dims{n, o, problem.out_height(), problem.out_width()};
    const memory::dims weight_dims = g == 1 ? memory::dims{o, c, d.kernel_h, d.kernel_w}
                                            : memory::dims{g, o / g, c / g, d.kernel_h, d.kernel_w};
    const memory::desc src(src_dims, memory::data_type::u8, memory::format_tag::nhwc);
    const memory::desc dst(dst_dims, memory::data_type::u8, memory::format_tag::nhwc);
    const memory::desc weights(weight_dims, memory::data_type::s8, memory::format_tag::any);
    const memory::desc bias({o}, memory::data_type::f32, memory::format_tag::x);
    const memory::dims strides{d.stride_h, d.stride_w};
    const memory::dims dilation{d.dilation_h - 1, d.dilation_w - 1};
    const memory::dims pad_begin{d.pad_top, d.pad_left};
    const memory::dims pad_end{d.pad_bottom - d.output_pad_h, d.pad_right - d.output_pad_w};

    dnnl::primitive_attr attr;
    std::vector<float> scales(static_cast<std::size_t>(o));
    for (memory::dim i = 0; i < o; ++i) {
      scales[static_cast<std::size_t>(i)] =
          static_cast<float>(d.input_scale * problem.weight_scale(i) / d.output_scale);
    }
    attr.set_output_scales(2, scales);  // per output channel
    attr.set_zero_points(DNNL_ARG_SRC, 0, {d.input_zero_point});
    attr.set_zero_points(DNNL_ARG_DST, 0, {d.output_zero_point});

    // A transposed layer runs on oneDNN's deconvolution (weights {O, C, kh, kw}, per group).
    memory::desc weights_desc, src_desc, dst_desc, bias_desc;
    const auto make = [&](const auto& pd) {
      implementation_ = pd.impl_info_str();
      weights_desc = pd.weights_desc();
      src_desc = pd.src_desc();
      dst_desc = pd.dst_desc();
      bias_desc = pd.bias_desc();
    };
    if (problem.transposed()) {
      const dnnl::deconvolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, src, weights,
          bias, dst, strides, dilation, pad_begin, pad_end);
      const dnnl::deconvolution_forward::primitive_desc pd(desc, attr, engine_);
      make(pd);
      primitive_ = dnnl::deconvolution_forward(pd);
    } else {
      const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                                 dnnl::algorithm::convolution_direct, src, weights,
                                                 bias, dst, strides, dilation, pad_begin, pad_end);
      const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine_);
      make(pd);
      primitive_ = dnnl::convolution_forward(pd);
    }

    // Weights arrive in the plain OIHW layout and are reordered once, as at model load.
    const memory::desc plain_weights(weight_dims, memory::data_type::s8,
                                     g == 1 ? memory::format_tag::oihw : memory::format_tag::goihw);
    memory plain(plain_weights, engine_);
    fill(plain, 0x35);
    weights_ = memory(weights_desc, engine_);
    dnnl::reorder(plain, weights_).execute(stream_, plain, weights_);
    src_ = memory(src_desc, engine_);
    fill(src_, 0x5a);
    dst_ = memory(dst_desc, engine_);
    bias_ = memory(bias_desc, engine_);
    auto* b = static_cast<float*>(bias_.get_data_handle());
    for (memory::dim i = 0; i < o; ++i) b[i] = 0.25f * static_cast<float>(i % 7);
    run();
    prepare_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
  }

  void run() override {
    omp_set_num_threads(threads_);
    primitive_.execute(stream_, {{DNNL_ARG_SRC, src_},
                                 {DNNL_ARG_WEIGHTS, weights_},
                                 {DNNL_ARG_BIAS, bias_},
                                 {DNNL_ARG_DST, dst_}});
    stream_.wait();
  }
  double prepare_ms() const override { return prepare_ms_; }
  std::string implementation() const override { return implementation_; }

 private:
  static void fill(memory& m, unsigned seed) {
    auto* bytes = static_cast<unsigned char*>(m.get_data_handle());
    const std::size_t size = m.get_desc().get_size();
    unsigned state = seed;
    for (std::size_t i = 0; i < size; ++i) {
      state = state * 1103515245u + 12345u;
      bytes[i] = static_cast<unsigned char>(state >> 16);
    }
  }

  int threads_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  dnnl::primitive primitive_;
  memory src_, weights_, bias_, dst_;
  std::string implementation_;
  double prepare_ms_ = 0.0;
};

}  // namespace

bool peer_available() { return true; }

void limit_peer_isa(const std::string& isa) {
  static const std::pair<const char*, dnnl::cpu_isa> kIsas[] = {
      {"sse41", dnnl::cpu_isa::sse41},
      {"avx", dnnl::cpu_isa::avx},
      {"avx2", dnnl::cpu_isa::avx2},
      {"avx2_vnni", dnnl::cpu_isa::avx2_vnni},
      {"avx512_core", dnnl::cpu_isa::avx512_core},
      {"avx512_core_vnni", dnnl::cpu_isa::avx512_core_vnni},
      {"avx512_core_bf16", dnnl::cpu_isa::avx512_core_bf16},
      {"avx512_core_amx", dnnl::cpu_isa::avx512_core_amx},
      {"all", dnnl::cpu_isa::all}};
  for (const auto& [name, value] : kIsas) {
    if (isa == name) {
      dnnl::set_max_cpu_isa(value);
      return;
    }
  }
  throw std::runtime_error("--peer-isa " + isa + ": not an ISA name oneDNN knows");
}

std::unique_ptr<Peer> make_peer(const Problem& problem, int threads, std::string& what) {
  const ProblemDesc& d = problem.desc();
  what = "u8 NHWC x s8 (oneDNN's layout) -> u8 NHWC, per-channel scales";
  if (d.weight_dtype != DType::s8 || d.input_dtype != DType::u8 ||
      problem.weight_zero_point(0) != 0 || d.weight_zero_point.size() > 1) {
    what +=
        " (oneDNN cannot run qconv's variant: it takes no weight zero point and no u8 "
        "weights; this is the symmetric u8 x s8 problem)";
  }
  ProblemDesc symmetric = d;
  symmetric.input_dtype = DType::u8;
  symmetric.weight_dtype = DType::s8;
  symmetric.weight_zero_point = {0};
  symmetric.input_zero_point = std::max(0, d.input_zero_point);
  symmetric.input_layout = Layout::NHWC;  // oneDNN's one fast int8 layout, whatever qconv runs
  symmetric.output_layout = Layout::NHWC;
  return std::make_unique<OnednnConvolution>(Problem(symmetric), threads);
}

#else

bool peer_available() { return false; }
void limit_peer_isa(const std::string&) {
  throw std::runtime_error("--peer-isa: this bench was built without oneDNN");
}
std::unique_ptr<Peer> make_peer(const Problem&, int, std::string& what) {
  what = "none: this bench was built without oneDNN (Debian libdnnl-dev)";
  return nullptr;
}

#endif

}  // namespace qconv::bench
