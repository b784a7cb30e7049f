#include "cluster/address.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/config.h"

namespace c960::cluster {

std::optional<HostPort> split_host_port(std::string_view address) {
  if (address.find("://") != std::string_view::npos || address.rfind("unix:", 0) == 0) return std::nullopt;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string_view::npos || close + 2 >= address.size() || address[close + 1] != ':')
      return std::nullopt;
    return HostPort{std::string(address.substr(1, close - 1)), std::string(address.substr(close + 2))};
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= address.size()) return std::nullopt;
  return HostPort{std::string(address.substr(0, colon)), std::string(address.substr(colon + 1))};
}

absl::StatusOr<std::string> check_address(absl::string_view flag, absl::string_view value, AddressRule rule) {
  const std::string range = rule.port_zero ? "1..65535 (or 0, which picks a free port)" : "1..65535";
  const auto bad = [&](auto... why) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": '", value.substr(0, 256), "' ", why...));
  };
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": empty; give HOST:PORT"));
  if (const size_t scheme = value.find("://"); scheme != absl::string_view::npos)
    return bad("has a scheme (", value.substr(0, scheme + 3), "); give HOST:PORT without a scheme");
  if (rule.unix_socket && absl::StartsWith(value, "unix:")) return std::string(value);
  for (char c : value)
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || absl::ascii_iscntrl(static_cast<unsigned char>(c)) ||
        c == '/')
      return bad("is not HOST:PORT (it holds '", c == '/' ? "/" : "a space", "')");

  absl::string_view host, port;
  bool has_port = false;
  bool ipv6 = false;
  if (value.front() == '[') {
    const size_t close = value.find(']');
    if (close == absl::string_view::npos) return bad("has a '[' without its ']'");
    host = value.substr(1, close - 1);
    ipv6 = true;
    if (host.empty() || host.find(':') == absl::string_view::npos) return bad("has no IPv6 address in its brackets");
    const absl::string_view rest = value.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad("has '", rest, "' after its ']'; give [IPV6]:PORT");
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
  } else {
    const size_t colon = value.find(':');
    if (colon != absl::string_view::npos && value.find(':', colon + 1) != absl::string_view::npos)
      return bad("is not HOST:PORT: an IPv6 address goes in brackets, e.g. [::1]:", kDefaultPort);
    host = value.substr(0, colon);
    has_port = colon != absl::string_view::npos;
    if (has_port) port = value.substr(colon + 1);
  }
  if (host.empty()) return bad("names no host; give HOST:PORT, e.g. 127.0.0.1:", kDefaultPort);
  if (!has_port && !rule.default_port) return bad("has no port; give HOST:PORT with a port in ", range);
  int number = kDefaultPort;
  if (has_port) {
    if (port.empty()) return bad("has no port after the ':'; give a port in ", range);
    if (port.find_first_not_of("0123456789") != absl::string_view::npos)
      return bad("has port '", port, "', not a number; give a port in ", range);
    // Digits only: leading zeros are dropped, and more than five digits are too many anyway.
    const size_t first = std::min(port.find_first_not_of('0'), port.size());
    const absl::string_view digits = port.substr(first);
    number = 0;
    if (digits.size() > 5) return bad("has port ", port, ", not in ", range);
    for (char c : digits) number = number * 10 + (c - '0');
    if (number > 65535 || (number == 0 && !rule.port_zero)) return bad("has port ", number, ", not in ", range);
  }
  return ipv6 ? absl::StrCat("[", host, "]:", number) : absl::StrCat(host, ":", number);
}

}  // namespace c960::cluster
