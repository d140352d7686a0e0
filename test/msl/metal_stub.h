// Metal Shading Language modelled in C++17, so that g++ can check (and run) the MSL
// that tessera prints, on a machine without Apple's toolchain.
//
//   g++ -std=c++17 -fsyntax-only -I test/msl -Wno-attributes -Werror=float-conversion ... kernels.metal
//
// What it enforces: `half` and `bfloat` are classes whose constructors from float, int
// (and, deleted, double) are all `explicit`, so `half h = 0.0;`, `half h = some_float;`,
// `h + 1.0f` or passing a half where a float is expected do not compile: every
// conversion in the printed code must be a static_cast, every literal typed. `bfloat`
// has no arithmetic at all (the printer computes bfloat through float).
// What it models numerically: half is IEEE binary16 (g++'s _Float16, round to nearest
// even), each half operation computed in float and rounded once (= the correctly rounded
// half result); bfloat is the upper half of a float, rounded to nearest even.
// The address spaces and `kernel` are empty macros; [[buffer(n)]] and
// [[thread_position_in_grid]] are unknown attributes (compile with -Wno-attributes).
#ifndef TESSERA_METAL_STUB_H
#define TESSERA_METAL_STUB_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#define kernel
#define device
#define constant
#define thread
#define threadgroup

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
static_assert(sizeof(long) == 8, "Metal's long is 64-bit");

class half {
 public:
  half() = default;
  explicit half(float f) : v_(static_cast<_Float16>(f)) {}
  explicit half(int i) : v_(static_cast<_Float16>(static_cast<float>(i))) {}
  explicit half(double) = delete;  // Metal has no double: a bare 0.0 is an error
  explicit operator float() const { return static_cast<float>(v_); }

  friend half operator+(half a, half b) { return half(float(a) + float(b)); }
  friend half operator-(half a, half b) { return half(float(a) - float(b)); }
  friend half operator*(half a, half b) { return half(float(a) * float(b)); }
  friend half operator/(half a, half b) { return half(float(a) / float(b)); }
  half operator-() const { return half(-float(*this)); }
  friend bool operator<(half a, half b) { return float(a) < float(b); }
  friend bool operator>(half a, half b) { return float(a) > float(b); }
  friend bool operator<=(half a, half b) { return float(a) <= float(b); }
  friend bool operator>=(half a, half b) { return float(a) >= float(b); }
  friend bool operator==(half a, half b) { return float(a) == float(b); }
  friend bool operator!=(half a, half b) { return float(a) != float(b); }

 private:
  _Float16 v_;
};
static_assert(sizeof(half) == 2 && std::is_trivially_copyable<half>::value, "half is 2 bytes");

class bfloat {
 public:
  bfloat() = default;
  explicit bfloat(float f) : bits_(round(f)) {}
  explicit bfloat(double) = delete;
  explicit operator float() const {
    const uint32_t u = static_cast<uint32_t>(bits_) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }

 private:
  static uint16_t round(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  uint16_t bits_;
};
static_assert(sizeof(bfloat) == 2 && std::is_trivially_copyable<bfloat>::value, "bfloat is 2 bytes");

template <typename To, typename From>
To as_type(From x) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
  To out;
  std::memcpy(&out, &x, sizeof(To));
  return out;
}

namespace metal {
namespace precise {
inline float exp(float x) { return std::exp(x); }
inline float log(float x) { return std::log(x); }
inline float tanh(float x) { return std::tanh(x); }
inline float sqrt(float x) { return std::sqrt(x); }
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline float pow(float x, float y) { return std::pow(x, y); }
}  // namespace precise

inline float fabs(float x) { return std::fabs(x); }
inline float floor(float x) { return std::floor(x); }
inline float ceil(float x) { return std::ceil(x); }
inline float trunc(float x) { return std::trunc(x); }
inline float rint(float x) { return std::nearbyint(x); }
inline float copysign(float x, float y) { return std::copysign(x, y); }
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline bool signbit(float x) { return std::signbit(x); }
inline half fabs(half x) { return half(std::fabs(float(x))); }
inline half floor(half x) { return half(std::floor(float(x))); }
inline half ceil(half x) { return half(std::ceil(float(x))); }
inline half trunc(half x) { return half(std::trunc(float(x))); }
inline half rint(half x) { return half(std::nearbyint(float(x))); }
inline half copysign(half x, half y) { return half(std::copysign(float(x), float(y))); }
inline half fma(half a, half b, half c) { return half(static_cast<float>(std::fma(double(float(a)), double(float(b)), double(float(c))))); }
}  // namespace metal

#endif  // TESSERA_METAL_STUB_H
