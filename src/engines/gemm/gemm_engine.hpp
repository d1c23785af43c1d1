// SPDX-License-Identifier: Apache-2.0
// The GEMM planner as an Engine: one per instruction set, each running the same plans (paths,
// padding patterns, groups, transposed, NCHW, the packed panels) on its own KernelSet.
#pragma once

#include <memory>
#include <string>

#include "engines/engine.hpp"
#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::gemm {

// An engine named `name` that runs `kernels` (which must outlive it) on a CPU with every feature of
// `required`; with `amx`, AMX blocks where the problem allows (kernels.amx_* must be set).
std::unique_ptr<Engine> make_engine(std::string name, CpuFeatures required,
                                    const KernelSet& kernels, bool amx);

}  // namespace qconv::detail::gemm
