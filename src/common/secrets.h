// Credentials at rest: kubeconfigs are sealed with AES-256-GCM (OpenSSL)
// before they reach the store, and opened when read.
//
// A key file holds one or more 256-bit keys, one per line, as 64 hex digits
// (blank lines and `#` comments ignored). The first seals; every key opens
// (rotation: put the new key first, keep the old ones until `eco secrets
// reseal` has run). A sealed value is "ecosec1", the first 8 bytes of the
// key's SHA-256 (which key), a 12-byte random nonce, the ciphertext and the
// 16-byte tag; anything else is a value stored before encryption and is
// read as it is.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace eco::secrets {

// Loads the keys of `path`; with `generate`, a missing file is created with
// one fresh key (mode 0600). Call once, at start, before serving.
Status Configure(const std::string& path, bool generate);
// Keys from text (the key file's format), e.g. from an environment variable.
Status ConfigureFromText(std::string_view text, const std::string& source);
// Forgets the keys (tests).
void Reset();
bool Enabled();

// `plaintext` sealed with the first key; unchanged when no key is configured.
Result<std::string> Seal(std::string_view plaintext);
// The plaintext of a stored value: opened when sealed, as it is otherwise.
// kInvalid when sealed with an unknown key or altered.
Result<std::string> Open(std::string_view stored);
bool IsSealed(std::string_view stored);
// Whether `stored` is sealed with the first (current) key.
bool SealedWithCurrentKey(std::string_view stored);

// A fresh key in the key file's format (64 hex digits).
std::string NewKeyText();

}  // namespace eco::secrets
