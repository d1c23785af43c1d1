// SPDX-License-Identifier: Apache-2.0
// The exceptions qconv throws. Every message names the field, the value given and the rule broken,
// so a caller can fix the call without reading the library's source.
#pragma once

#include <stdexcept>
#include <string>

namespace qconv {

// Base of everything qconv throws on bad input. Nothing is written to an output when one is thrown.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A parameter value breaks a rule (a stride of 0, a scale that is NaN, an unknown layout name).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A tensor's shape, dtype, layout or buffer size disagrees with the problem it is given for.
class ShapeMismatch : public Error {
 public:
  using Error::Error;
};

// The exact accumulator could leave the s32 range for these zero points and weights (SPEC §3).
class OverflowRisk : public Error {
 public:
  using Error::Error;
};

// Prepared weights (a Plan) used with a problem they were not prepared for.
class PreparedMismatch : public Error {
 public:
  using Error::Error;
};

// A prepared-weights file that is truncated, corrupted, of another version or for another CPU.
class FormatError : public Error {
 public:
  using Error::Error;
};

}  // namespace qconv
