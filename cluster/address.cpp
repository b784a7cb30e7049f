#include "cluster/address.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
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

absl::StatusOr<std::string> check_address_list(absl::string_view flag, absl::string_view value, AddressRule rule) {
  if (value.find(',') == absl::string_view::npos) return check_address(flag, value, rule);
  const std::vector<absl::string_view> items = absl::StrSplit(value, ',');
  if (items.size() > size_t(kMaxCoordinatorAddresses))
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", items.size(), " addresses; at most ",
                                                   kMaxCoordinatorAddresses, " coordinators may be named"));
  std::vector<std::string> out;
  for (size_t k = 0; k < items.size(); ++k) {
    const absl::string_view item = absl::StripAsciiWhitespace(items[k]);
    if (item.empty())
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": address ", k + 1, " of ", items.size(), " is empty; give HOST:PORT,HOST:PORT"));
    if (rule.unix_socket && absl::StartsWith(item, "unix:"))
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", item.substr(0, 256), "': a unix socket names one coordinator; give it alone"));
    absl::StatusOr<std::string> one = check_address(flag, item, rule);
    if (!one.ok()) return one.status();
    if (std::find(out.begin(), out.end(), *one) != out.end())
      return absl::InvalidArgumentError(absl::StrCat(flag, ": '", *one, "' is named twice"));
    out.push_back(std::move(*one));
  }
  return absl::StrJoin(out, ",");
}

std::vector<std::string> split_address_list(absl::string_view list) {
  if (list.empty()) return {};
  return absl::StrSplit(list, ',');
}

}  // namespace c960::cluster
