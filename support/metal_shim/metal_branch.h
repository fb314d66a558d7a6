// Included first in every kernel unit where c10/metal's headers take their Metal branch by
// __METAL__ (codegen/torch_versions.py FEATURES["float8"], torch 2.15 and later): common.h
// includes float8.h there, whose conversions utils.h's casts call, and its host branch would
// include c10/util/complex.h and <cmath>, whose global expm1f makes igamma.h's call ambiguous.
// The Metal compiler defines __METAL__; so does the shim for these torches.
#pragma once
#ifndef __METAL__
#define __METAL__ 1
#endif
#include <metal_stdlib>

// as_type is Metal's global reinterpreting cast (MSL 2.4.1): float8.h calls it unqualified.
using ::metal::as_type;
