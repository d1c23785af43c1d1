// SPDX-License-Identifier: Apache-2.0
// Everything public in one include.
#pragma once

#include "qconv/error.hpp"
#include "qconv/faces/functional.hpp"
#include "qconv/faces/onnx.hpp"
#include "qconv/faces/qnn.hpp"
#include "qconv/faces/ttnn.hpp"
#include "qconv/plan.hpp"
#include "qconv/problem.hpp"
#include "qconv/scheme.hpp"
#include "qconv/serialize.hpp"
#include "qconv/tensor.hpp"
#include "qconv/types.hpp"
