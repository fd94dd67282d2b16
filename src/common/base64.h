// Base64 (RFC 4648), the one implementation eco uses: Helm's b64enc/b64dec
// and !!binary, kubeconfig *-data fields, JWT segments, stored files.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace eco {

// Standard alphabet with '=' padding and no line breaks (Go's
// base64.StdEncoding.EncodeToString).
std::string Base64Encode(std::string_view bytes);

// How Base64Decode reads its input. The default is Go's
// base64.StdEncoding.DecodeString: standard alphabet, padding required,
// '\r' and '\n' skipped anywhere, non-zero bits in the last symbol accepted.
struct Base64Decoding {
  enum class Skip {
    kNone,        // every byte counts (a newline is an error)
    kNewlines,    // '\r' and '\n', as Go's decoders do
    kWhitespace,  // also ' ' and '\t' (a folded YAML scalar)
  };
  bool url_alphabet = false;  // '-' and '_' in place of '+' and '/' (RFC 4648 §5)
  bool padded = true;         // '=' required; false: '=' is refused (Go's Raw*Encoding)
  bool strict = false;        // unused bits of the last symbol must be zero (Go's Strict())
  Skip skip = Skip::kNewlines;
};

// Decodes `text`; kInvalid "illegal base64 data at input byte N" (Go's
// CorruptInputError, N counting every byte of `text`) when it is not
// base64 as `how` reads it.
Result<std::string> Base64Decode(std::string_view text, const Base64Decoding& how = {});

}  // namespace eco
