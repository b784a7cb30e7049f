#!/usr/bin/env bash
# Makes what a c960 deployment needs for TLS and tokens (docs/deploy.md, docs/cluster.md
# "Security model"), with openssl and `c960 token new`:
#   ca.crt ca.key                 a CA (keep ca.key off the cluster's machines: it signs certificates)
#   coordinator.crt .key          the coordinator's certificate, signed by the CA, for every host
#                                 name and address that clients and probes dial (--hosts)
#   tokens                        the coordinator's --tokens file: one line per token below
#   admin.token submit.token      one token per role, for its holder (--token-file FILE); the
#   read.token                    tokens file holds only their hashes
#   enroll.token                  the workers' join token: each worker trades it once for a
#                                 credential of its own (c960-worker --enroll-token-file FILE
#                                 --credential-file FILE); --workers N bounds how many (default 16).
#                                 Its line in tokens says owner=OWNER (--owner): all these workers
#                                 are one owner, one voter when results are verified
#   NAME.enroll.token             with --contributor NAME: a join token of its own for an outside
#                                 contributor, owner=NAME (never the operator's), --workers uses
# Keys and tokens are mode 600, certificates 644. DIR must not hold any of these files yet.
#   deploy/make-secrets.sh DIR [--hosts NAME,ADDRESS,...] [--workers 16] [--owner operator] [--contributor NAME]... [--days 825] [--c960 PATH]
# The certificate always names coordinator, localhost, 127.0.0.1 and ::1 (what the compose file's
# workers and the health checks dial, and a first try on one machine).
# --hosts: comma-separated DNS names and IP addresses that clients and workers dial besides those
# (added to them, not instead; the first is the certificate's CN, else coordinator).
# --workers: the worker credentials each join token may be traded for (replaced containers and
# VMs enroll again: leave room for them).
# --owner: the owner (person or organisation) of the workers that enroll with enroll.token
# (default operator). When they are the operator's own machines, start the coordinator with
# --trust-roots OWNER: their results then decide disagreements and audits. Hosts that share one
# join token are one owner and one trust domain.
# --contributor NAME (repeatable): a join token NAME.enroll.token for an outside contributor, whose
# workers are the owner NAME; not a trust root. NAME is also the join token's name (its
# credentials are NAME:1, NAME:2, ...): not admin, submit, read, workers or the --owner.
# --c960: the c960 tool for the tokens (default: c960 on PATH, else build/release/cli/c960).
# Exit status: 0 made, 1 openssl or c960 failed, 2 bad usage.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

usage() {
  sed -n 's/^#   \(deploy\/make-secrets.sh .*\)/usage: \1/p' "$0" >&2
  echo "(deploy/make-secrets.sh --help: what it makes and its options)" >&2
  exit 2
}
help() {  # the comment above, from its second line to the exit status
  sed -n '2,/^# Exit status/s/^# \{0,1\}//p' "$0"
  exit 0
}
die() {  # die STATUS MESSAGE
  echo "make-secrets.sh: $2" >&2
  exit "$1"
}

default_hosts="coordinator,localhost,127.0.0.1,::1"
dir="" hosts="" days=825 c960="" workers=16 owner=operator
contributors=()
while (($#)); do
  case "$1" in
    --owner) (($# >= 2)) || die 2 "--owner needs a value"; owner="$2"; shift 2 ;;
    --owner=*) owner="${1#*=}"; shift ;;
    --contributor) (($# >= 2)) || die 2 "--contributor needs a value"; contributors+=("$2"); shift 2 ;;
    --contributor=*) contributors+=("${1#*=}"); shift ;;
    --workers) (($# >= 2)) || die 2 "--workers needs a value"; workers="$2"; shift 2 ;;
    --workers=*) workers="${1#*=}"; shift ;;
    --hosts) (($# >= 2)) || die 2 "--hosts needs a value"; hosts="$2"; shift 2 ;;
    --hosts=*) hosts="${1#*=}"; shift ;;
    --days) (($# >= 2)) || die 2 "--days needs a value"; days="$2"; shift 2 ;;
    --days=*) days="${1#*=}"; shift ;;
    --c960) (($# >= 2)) || die 2 "--c960 needs a value"; c960="$2"; shift 2 ;;
    --c960=*) c960="${1#*=}"; shift ;;
    -h | --help) help ;;
    -*) echo "make-secrets.sh: unknown option '$1'" >&2; usage ;;
    *) [[ -z "$dir" ]] || die 2 "one DIR only ('$dir', then '$1')"; dir="$1"; shift ;;
  esac
done
[[ -n "$dir" ]] || usage
[[ "$days" =~ ^[1-9][0-9]{0,4}$ ]] || die 2 "--days: '$days' is not a number of days (1..99999)"
[[ "$workers" =~ ^[1-9][0-9]{0,4}$ ]] || die 2 "--workers: '$workers' is not a number of workers (1..99999)"
# Owner and token names as the tokens file takes them.
name_re='^[A-Za-z0-9._-]{1,64}$'
[[ "$owner" =~ $name_re ]] || die 2 "--owner: '$owner' is not 1..64 characters of A-Z a-z 0-9 . _ -"
seen_contributors=","
for c in "${contributors[@]}"; do
  [[ "$c" =~ $name_re ]] || die 2 "--contributor: '$c' is not 1..64 characters of A-Z a-z 0-9 . _ -"
  case "$c" in
    admin | submit | read | workers) die 2 "--contributor: '$c' is the name of another token here: choose another" ;;
  esac
  [[ "$c" != "$owner" ]] || die 2 "--contributor: '$c' is the operator's owner (--owner): a contributor is another owner"
  [[ "$seen_contributors" != *",$c,"* ]] || die 2 "--contributor: '$c' named twice"
  seen_contributors+="$c,"
done

# The subjectAltName: IP: for addresses, DNS: for names; anything else is refused here rather
# than making a certificate no client accepts.
san="" cn="" seen=","
IFS=, read -r -a host_list <<<"$hosts"
IFS=, read -r -a default_list <<<"$default_hosts"
for h in "${host_list[@]}" "${default_list[@]}"; do
  [[ -n "$h" ]] || continue
  [[ "$seen" != *",$h,"* ]] || continue  # named twice (or also a default): once in the certificate
  seen+="$h,"
  if [[ "$h" =~ ^([0-9]{1,3}\.){3}[0-9]{1,3}$ || ("$h" == *:* && "$h" =~ ^[0-9A-Fa-f:.]+$) ]]; then
    san+=",IP:$h"
  elif [[ "$h" =~ ^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$ && ${#h} -le 253 ]]; then
    san+=",DNS:$h"
  else
    die 2 "--hosts: '$h' is neither a DNS name nor an IP address"
  fi
  [[ -n "$cn" ]] || cn="$h"
done
san="${san#,}"

if [[ -z "$c960" ]]; then
  if command -v c960 >/dev/null; then c960=$(command -v c960); else c960="$here/../build/release/cli/c960"; fi
fi
[[ -x "$c960" ]] || die 2 "--c960: '$c960' is not an executable c960 tool (build it, or give --c960 PATH)"
command -v openssl >/dev/null || die 1 "openssl not found (Debian: apt install openssl)"

roles=(admin submit read enroll)
files=(ca.crt ca.key coordinator.crt coordinator.key tokens "${roles[@]/%/.token}")
for c in "${contributors[@]}"; do files+=("$c.enroll.token"); done
mkdir -p "$dir"
for f in "${files[@]}"; do
  [[ ! -e "$dir/$f" ]] || die 2 "$dir/$f exists: give an empty folder (a new CA and new tokens replace nothing)"
done

# Nothing is readable by others while it is made; certificates are opened up at the end.
umask 077
work=$(mktemp -d "$dir/.make-secrets.XXXXXX")
trap 'rm -rf "$work"' EXIT
openssl_log="$work/openssl.log"
run_openssl() { openssl "$@" 2>>"$openssl_log" >/dev/null || die 1 "openssl $1 failed: $(tail -5 "$openssl_log")"; }

# EC P-256 keys, as docs/cluster.md makes them by hand.
run_openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
  -keyout "$work/ca.key" -out "$work/ca.crt" -subj "/CN=c960 CA"
run_openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$work/coordinator.key" -out "$work/coordinator.csr" -subj "/CN=$cn"
cat >"$work/coordinator.ext" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$san
EXT
run_openssl x509 -req -in "$work/coordinator.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -days "$days" -extfile "$work/coordinator.ext" -out "$work/coordinator.crt"
run_openssl verify -CAfile "$work/ca.crt" "$work/coordinator.crt"

# `c960 token new` prints the token, then the tokens file's line (ROLE NAME sha256:HASH, and
# uses=N and owner=OWNER for a join token). Each token is named after its role; the operator's
# join token "workers", so that the credentials it is traded for are named workers:1, workers:2,
# ..., and a contributor's join token after the contributor (alice:1, alice:2, ...).
# new_token FILE ARGS...: FILE gets the token, the tokens file its line.
new_token() {
  local file="$1" out
  shift
  out=$("$c960" token new "$@") || die 1 "c960 token new $* failed"
  [[ $(wc -l <<<"$out") == 2 ]] || die 1 "c960 token new $*: unexpected output"
  head -n 1 <<<"$out" >"$work/$file"
  tail -n 1 <<<"$out" >>"$work/tokens"
}
: >"$work/tokens"
for role in "${roles[@]}"; do
  if [[ "$role" == enroll ]]; then
    new_token enroll.token --role enroll --name workers --uses "$workers" --owner "$owner"
  else
    new_token "$role.token" --role "$role" --name "$role"
  fi
done
for c in "${contributors[@]}"; do
  new_token "$c.enroll.token" --role enroll --name "$c" --uses "$workers" --owner "$c"
done
grep -q " owner=$owner\$" "$work/tokens" ||
  die 1 "$c960 wrote no owner= in the join token's line (a c960 older than owners? give --c960 PATH)"

chmod 644 "$work/ca.crt" "$work/coordinator.crt"
for f in "${files[@]}"; do mv "$work/$f" "$dir/$f"; done
echo "made in $dir: a CA (ca.crt; ca.key stays with you), coordinator.crt/.key for $san, tokens for" \
  "admin, submit and read, and enroll.token, which $workers workers may trade for a credential each" \
  "(tokens: the coordinator's --tokens file)"
echo "the workers of enroll.token belong to the owner '$owner': where they are your own machines, start" \
  "the coordinator with --trust-roots $owner (their results then decide disagreements and audits)"
for c in "${contributors[@]}"; do
  echo "$c.enroll.token: for the contributor '$c' only ($workers workers, owner '$c', not a trust root)"
done
