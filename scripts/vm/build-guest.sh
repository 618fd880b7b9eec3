#!/usr/bin/env bash
# Builds the tiny Linux guest that Glovebox boots under QEMU (TCG):
#   scripts/vm/build-guest.sh OUT_DIR GUEST_BINARY
# Writes OUT_DIR/kernel (what QEMU gets with -kernel), OUT_DIR/initrd (the whole root filesystem,
# a cpio archive: no disk, no 9p) and OUT_DIR/stamp. Everything comes from Debian packages.
#
# The guest's /init mounts the usual filesystems, brings up eth0 as 10.0.2.15/24 behind QEMU's
# user networking (gateway 10.0.2.2), starts Xvfb on :0, and keeps
#   /bin/glovebox-guest serve --listen 0.0.0.0:8000 --display :0
# running. Kernel command line: glovebox.screen=WxH (default 1024x768), glovebox.app=PROGRAM
# (optional, e.g. xterm, started once on :0). The guest server's token, when there is one, comes
# from the fw_cfg entry opt/glovebox/token (QEMU's -fw_cfg name=opt/glovebox/token,file=F).
# Console lines are prefixed "glovebox-init:", "xvfb:" or "glovebox-guest:"; "glovebox-init: ready"
# marks the moment the guest server is started.
#
# Idempotent: OUT_DIR/stamp hashes this script, the guest binary, the kernel package version and
# the versions of the host packages copied in; when it matches, the script exits at once. The
# kernel .deb and what is taken from it are cached in OUT_DIR/kernel-pkg/, so a rebuild after the
# guest binary changed only repacks the cpio. Two processes may run this at once: they serialize
# on flock(OUT_DIR/.lock), and every output is written to a temp file and renamed.
#
# Environment (each is part of the stamp):
#   BUILD_GUEST_TEST_STUB=1        /init runs `busybox httpd -f -p 8000 -h /www` instead of the
#                                  guest server (for testing the image without a real guest binary;
#                                  /www has index.html and cgi-bin/{bootid,ps,reboot}).
#   BUILD_GUEST_INITRD_COMPRESS    lz4 (default) | none | gzip | zstd; see the measurements at
#                                  the packing step at the end.
set -euo pipefail

die() { echo "build-guest: $*" >&2; exit 1; }

if [ $# -ne 2 ]; then
  echo "usage: $0 OUT_DIR GUEST_BINARY" >&2
  exit 2
fi
out=$1
guest=$2
[ -f "$guest" ] || die "guest binary $guest does not exist"
[ -x "$guest" ] || die "guest binary $guest is not executable"
[ "$(head -c 4 "$guest" | od -An -c | tr -d ' ')" = '177ELF' ] || die "guest binary $guest is not an ELF executable"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self="$here/$(basename "${BASH_SOURCE[0]}")"
stub=${BUILD_GUEST_TEST_STUB:-0}
compress=${BUILD_GUEST_INITRD_COMPRESS:-lz4}
case "$compress" in none|gzip|lz4|zstd) ;; *) die "BUILD_GUEST_INITRD_COMPRESS must be none, gzip, lz4 or zstd, not $compress" ;; esac

# The virtio-net over virtio-pci stack, in load order: each one's dependencies come before it
# (checked against the .ko's own depends= list below, so a kernel with other dependencies fails
# the build instead of a guest without network). Ones built into the kernel are skipped.
modules=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci failover net_failover virtio_net qemu_fw_cfg)

# Host packages whose files go into the ramroot: their versions are in the stamp, so an upgrade on
# the host rebuilds the image. Command -> package, for installing what is missing.
host_pkgs=(busybox-static xvfb x11-xkb-utils xkb-data xterm libx11-data libc6)
declare -A need_cmd=(
  [busybox]=busybox-static [Xvfb]=xvfb [xkbcomp]=x11-xkb-utils [xterm]=xterm
  [dpkg-deb]=dpkg [apt-get]=apt [xz]=xz-utils [strip]=binutils [readelf]=binutils
  [objcopy]=binutils [ldd]=libc-bin [flock]=util-linux [sha256sum]=coreutils
)
case "$compress" in gzip) need_cmd[gzip]=gzip ;; lz4) need_cmd[lz4]=lz4 ;; zstd) need_cmd[zstd]=zstd ;; esac
missing=()
for c in "${!need_cmd[@]}"; do command -v "$c" >/dev/null 2>&1 || missing+=("${need_cmd[$c]}"); done
[ -d /usr/share/X11/xkb/rules ] || missing+=(xkb-data)
if [ ${#missing[@]} -gt 0 ]; then
  # Sorted and unique so the message names each package once.
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  # The repository's installer when this runs from it; `glovebox vm create` runs a copy of this
  # script from its cache, without the repository: apt-get directly, as root.
  if [ -x "$here/../apt-install.sh" ]; then
    "$here/../apt-install.sh" "the VM guest image" --no-recommends "${missing[@]}" \
      || die "could not install ${missing[*]}; install them (Debian packages) and run again"
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "build-guest: installing Debian packages for the VM guest image (one time): ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || die "could not install ${missing[*]}; run: apt-get update && apt-get install ${missing[*]}"
  else
    die "the VM guest image needs these Debian packages: ${missing[*]} (as root: apt-get install ${missing[*]})"
  fi
fi
# busybox-static, not the dynamic busybox: /init and the applets must run before any library is
# there to load, and one static file is all it takes.
busybox=$(command -v busybox)
if ldd "$busybox" >/dev/null 2>&1; then
  die "$busybox is dynamically linked; install the Debian package busybox-static"
fi

# The real kernel package behind the linux-image-amd64 metapackage (e.g. linux-image-6.1.0-57-amd64)
# and its version, from the metapackage's exact dependency "(= 6.1.192-3)". apt-cache takes most of
# a second here (Debian's container images turn apt's binary cache off), which would be most of a
# stamp hit; its answer only changes with apt's lists or sources, so it is kept in
# OUT_DIR/kernel-pkg/resolved keyed on their names, sizes and times.
mkdir -p "$out/kernel-pkg"
apt_state() {
  # stat fails for a pattern that matched nothing; the files that do exist are still listed.
  { stat -c '%n %s %Y' /var/lib/apt/lists/*Packages* /var/lib/apt/lists/*Release /etc/apt/sources.list \
      /etc/apt/sources.list.d/* /etc/apt/preferences /etc/apt/preferences.d/* 2>/dev/null || true; } \
    | sha256sum | cut -d' ' -f1
}
apt_state=$(apt_state)
kpkg= kver=
if [ -f "$out/kernel-pkg/resolved" ]; then
  read -r key kpkg kver <"$out/kernel-pkg/resolved" || true
  [ "$key" = "$apt_state" ] || kpkg= kver=
fi
resolve_kernel() {
  apt-cache show --no-all-versions linux-image-amd64 2>/dev/null | awk '
    $1 == "Depends:" {
      for (i = 2; i <= NF; i++) if ($i ~ /^linux-image-[0-9]/) {
        v = $(i + 2); sub(/\),?$/, "", v)
        if ($(i + 1) == "(=") print $i, v; else print $i
        exit
      }
    }'
}
if [ -z "$kpkg" ]; then
  read -r kpkg kver < <(resolve_kernel) || true
  if [ -z "$kpkg" ]; then
    echo "build-guest: apt knows no linux-image-amd64 yet; running apt-get update once" >&2
    if [ "$(id -u)" = 0 ]; then apt-get update -qq; else sudo apt-get update -qq; fi \
      || die "apt-get update failed; the guest kernel comes from Debian's linux-image-amd64"
    read -r kpkg kver < <(resolve_kernel) || true
  fi
  [ -n "$kpkg" ] || die "apt-cache finds no linux-image-<version>-amd64 behind linux-image-amd64 (is this Debian amd64?)"
  if [ -z "$kver" ]; then
    kver=$(apt-cache policy "$kpkg" | awk '$1 == "Candidate:" { print $2; exit }')
  fi
  [ -n "$kver" ] && [ "$kver" != "(none)" ] || die "apt has no candidate version of $kpkg"
  # apt-get update above changed the lists: key on the state after it.
  apt_state=$(apt_state)
  echo "$apt_state $kpkg $kver" >"$out/kernel-pkg/resolved.$$"
  mv -f "$out/kernel-pkg/resolved.$$" "$out/kernel-pkg/resolved"
fi

host_versions=$(dpkg-query -W -f '${Package}=${Version}\n' "${host_pkgs[@]}" 2>/dev/null || true)
# Hashed apart from the pipeline below, where a failure would go unnoticed.
inputs_hash=$(sha256sum "$self" "$guest" | cut -d' ' -f1) || die "cannot read $self or $guest"
stamp=$(
  {
    echo "$inputs_hash"
    echo "kernel $kpkg=$kver"
    echo "$host_versions"
    echo "stub=$stub compress=$compress"
  } | sha256sum | cut -d' ' -f1
)
fresh() {
  [ -f "$out/stamp" ] && [ -f "$out/kernel" ] && [ -f "$out/initrd" ] && [ "$(cat "$out/stamp")" = "$stamp" ]
}
# Fast path without the lock: outputs are only ever replaced by rename, the stamp last.
if fresh; then exit 0; fi

exec 9>"$out/.lock"
flock 9
# Another process may have built the same image while this one waited.
if fresh; then exit 0; fi

# Temp files live in OUT_DIR so the final renames stay on one filesystem (atomic).
work=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# ---- Kernel: cached per package version in OUT_DIR/kernel-pkg/<pkg>_<version>/ ----
kcache="$out/kernel-pkg/${kpkg}_${kver}"
# A cache made for another module list is made again (its `done` names the list it holds).
if [ -f "$kcache/done" ] && [ "$(cat "$kcache/done")" != "${modules[*]}" ]; then
  rm -rf "$kcache"
fi
if [ ! -f "$kcache/done" ]; then
  echo "build-guest: fetching $kpkg $kver" >&2
  kt="$work/kpkg"
  mkdir -p "$kt/modules"
  # As root, apt's download sandbox user (_apt) cannot write into a mktemp directory; downloading
  # as root is what would happen anyway, so say so instead of printing a warning.
  sandbox=()
  [ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
  (cd "$kt" && apt-get download -qq "${sandbox[@]}" "$kpkg=$kver") \
    || die "apt-get download $kpkg=$kver failed (run apt-get update?)"
  deb=$(ls "$kt"/*.deb)
  dpkg-deb -x "$deb" "$kt/x"
  vmlinuz=$(ls "$kt"/x/boot/vmlinuz-*)
  kconfig=$(ls "$kt"/x/boot/config-*)
  kmoddir=$(ls -d "$kt"/x/lib/modules/*)
  cp "$kconfig" "$kt/config"

  # Prefer the uncompressed vmlinux with its PVH entry note: QEMU then jumps straight into the
  # kernel instead of running the bzImage's own decompressor, which under TCG takes seconds.
  # The x86 bzImage payload is the ELF vmlinux, compressed; find its start by magic and
  # decompress with --single-stream, which ignores the size word appended after the stream.
  kind=bzImage
  if grep -q '^CONFIG_PVH=y' "$kconfig"; then
    for magic in '\xfd7zXZ\x00:xz -dc --single-stream' '\x28\xb5\x2f\xfd:zstd -dcq' '\x1f\x8b\x08:gzip -dc'; do
      pattern=${magic%%:*}
      cmd=${magic#*:}
      for off in $(LC_ALL=C grep -obUaP "$pattern" "$vmlinuz" | cut -d: -f1); do
        if tail -c +"$((off + 1))" "$vmlinuz" | $cmd >"$kt/vmlinux" 2>/dev/null \
          || [ "$(head -c 4 "$kt/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then
          # 0x12 is XEN_ELFNOTE_PHYS32_ENTRY, the PVH entry point (readelf may name it or not).
          if readelf -n "$kt/vmlinux" 2>/dev/null | grep -Eq 'Xen.*(0x00000012|PHYS32_ENTRY)'; then
            kind=pvh
            break 2
          fi
        fi
      done
    done
  fi
  if [ "$kind" = pvh ]; then
    mv "$kt/vmlinux" "$kt/kernel"
  else
    echo "build-guest: no PVH vmlinux could be extracted from $vmlinuz; using the bzImage" >&2
    rm -f "$kt/vmlinux"
    cp "$vmlinuz" "$kt/kernel"
  fi
  echo "$kind" >"$kt/kind"

  # The modules: only the virtio-net stack, decompressed (busybox insmod takes a plain .ko).
  builtin="$kmoddir/modules.builtin"
  loaded=" "
  for m in "${modules[@]}"; do
    if grep -Eq "/${m}\.ko\$" "$builtin"; then
      loaded+="$m "
      continue
    fi
    ko=$(find "$kmoddir/kernel" \( -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" -o -name "$m.ko.gz" \) | head -n1)
    [ -n "$ko" ] || die "$kpkg has neither module nor built-in $m (virtio-net would not work)"
    case "$ko" in
      *.xz) xz -dc "$ko" >"$kt/modules/$m.ko" ;;
      *.zst) zstd -dcq "$ko" >"$kt/modules/$m.ko" ;;
      *.gz) gzip -dc "$ko" >"$kt/modules/$m.ko" ;;
      *) cp "$ko" "$kt/modules/$m.ko" ;;
    esac
    deps=$(objcopy -O binary --only-section=.modinfo "$kt/modules/$m.ko" /dev/stdout | tr '\0' '\n' \
      | sed -n 's/^depends=//p' | tr ',' ' ')
    for d in $deps; do
      case "$loaded" in *" $d "*) ;; *) die "module $m of $kpkg needs $d, which is not loaded before it; fix modules=() in $self" ;; esac
    done
    loaded+="$m "
    echo "$m" >>"$kt/modules/order"
  done
  touch "$kt/modules/order"
  rm -rf "$kt/x"
  echo "${modules[*]}" >"$kt/done"
  rm -rf "$kcache"
  mv "$kt" "$kcache"
  # Older kernel versions are of no further use; each one is 70+ MB.
  for old in "$out"/kernel-pkg/*/; do
    [ "${old%/}" = "$kcache" ] || rm -rf "$old"
  done
fi
kind=$(cat "$kcache/kind")

# ---- The ramroot ----
root="$work/root"
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,run,root,var/lib/xkb,var/tmp}
# Debian 12's merged /usr, so that the paths ldd prints (/lib/..., /lib64/...) and the ones
# compiled into the X server (/usr/bin/xkbcomp) all resolve.
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
chmod 1777 "$root/tmp" "$root/var/tmp"

cp "$busybox" "$root/usr/bin/busybox"
# Applet links (sh, mount, ip, insmod, reboot, ...), all in /usr/bin, made by busybox itself in one
# process (a loop of `ln` takes 0.4 s). They point at busybox's own path on this host, which must
# be one that exists in the ramroot too.
"$busybox" --install -s "$root/usr/bin"
case "$(readlink "$root/usr/bin/sh")" in
  /usr/bin/busybox|/bin/busybox) ;;
  *) die "busybox --install linked its applets to $(readlink "$root/usr/bin/sh"), not /usr/bin/busybox" ;;
esac

# add_elf SOURCE DEST: copies an ELF executable into the ramroot with every shared library ldd
# finds for it, at the path ldd prints (so the dynamic loader's own path, too). Copies
# dereference symlinks: only the soname paths are ever opened.
declare -A copied=()
add_elf() {
  local src=$1 dest=$2 line lib
  mkdir -p "$(dirname "$root$dest")"
  # An applet link of that name would point at the host's busybox: replace it, never write through.
  rm -f "$root$dest"
  cp -L "$src" "$root$dest"
  local out_ldd
  # ldd fails ("not a dynamic executable") for static binaries, which need nothing more.
  out_ldd=$(ldd "$src" 2>/dev/null) || return 0
  if grep -q 'not found' <<<"$out_ldd"; then
    die "$src needs libraries this host lacks: $(grep 'not found' <<<"$out_ldd" | tr -s ' \t' ' ')"
  fi
  while read -r line; do
    case "$line" in
      *'=> /'*) lib=${line#*=> }; lib=${lib%% (*} ;;
      /*) lib=${line%% (*} ;;
      *) continue ;; # linux-vdso.so.1: in the kernel
    esac
    [ -n "${copied[$lib]:-}" ] && continue
    copied[$lib]=1
    mkdir -p "$(dirname "$root$lib")"
    cp -L "$lib" "$root$lib"
  done <<<"$out_ldd"
}

# The guest server: stripped on a copy (the caller's binary is left alone). Debug info is most
# of a Rust binary's size, and every byte of the cpio is copied by the emulated kernel.
cp "$guest" "$work/glovebox-guest"
chmod u+w "$work/glovebox-guest"
strip --strip-all "$work/glovebox-guest" || die "strip failed on a copy of $guest"
add_elf "$work/glovebox-guest" /usr/bin/glovebox-guest

# X: Xvfb runs xkbcomp (through /bin/sh) to compile the keymap at every start, from
# /usr/share/X11/xkb into /var/lib/xkb. Fonts: Xvfb's default path ends in "built-ins", which has
# `fixed` and `cursor`, all that Xvfb and xterm's defaults need, so no font files are copied.
add_elf "$(command -v Xvfb)" /usr/bin/Xvfb
add_elf "$(command -v xkbcomp)" /usr/bin/xkbcomp
mkdir -p "$root/usr/share/X11"
cp -a /usr/share/X11/xkb "$root/usr/share/X11/"
rm -rf "$root/usr/share/X11/xkb/compiled"
ln -s /var/lib/xkb "$root/usr/share/X11/xkb/compiled"
# Only used to name requests in X error messages, and small.
if [ -f /usr/lib/xorg/protocol.txt ]; then
  mkdir -p "$root/usr/lib/xorg"
  cp /usr/lib/xorg/protocol.txt "$root/usr/lib/xorg/"
fi

# xterm: a small real application, with its resources (without them its menus have no labels).
add_elf "$(command -v xterm)" /usr/bin/xterm
mkdir -p "$root/etc/X11/app-defaults"
cp /etc/X11/app-defaults/XTerm /etc/X11/app-defaults/XTerm-color "$root/etc/X11/app-defaults/" 2>/dev/null || true

# Xlib's locale table for the C locale, the guest's only one: without it Xlib says "locale not
# supported" and applications get no input method. The other locales' tables are 2 MB.
mkdir -p "$root/usr/share/X11/locale"
cp /usr/share/X11/locale/locale.alias /usr/share/X11/locale/locale.dir /usr/share/X11/locale/compose.dir \
  "$root/usr/share/X11/locale/"
cp -a /usr/share/X11/locale/C "$root/usr/share/X11/locale/"

# Modules, in load order.
mkdir -p "$root/lib/modules/glovebox"
cp "$kcache/modules/order" "$root/lib/modules/glovebox/"
for m in $(cat "$kcache/modules/order"); do cp "$kcache/modules/$m.ko" "$root/lib/modules/glovebox/"; done

# Users: glibc programs (xterm, the shell in it) look up uid 0 and the tty group.
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
tty:x:5:
EOF
cat >"$root/etc/hosts" <<'EOF'
127.0.0.1 localhost
::1 localhost
EOF
echo glovebox >"$root/etc/hostname"

if [ "$stub" = 1 ]; then
  mkdir -p "$root/www/cgi-bin"
  echo "glovebox test stub" >"$root/www/index.html"
  printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\n"\ncat /proc/sys/kernel/random/boot_id\n' >"$root/www/cgi-bin/bootid"
  printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\n"\nps\n' >"$root/www/cgi-bin/ps"
  printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\nrebooting\\n"\n(sleep 1; reboot -f) </dev/null >/dev/null 2>&1 &\n' >"$root/www/cgi-bin/reboot"
  chmod 755 "$root"/www/cgi-bin/*
fi

# /init: PID 1. It must never exit (the kernel panics if PID 1 does), so every long-running part
# is a loop and nothing in it uses `set -e`.
{
  echo '#!/bin/sh'
  echo "GLOVEBOX_TEST_STUB=$stub"
  cat <<'EOF'
export PATH=/usr/bin:/usr/sbin:/bin:/sbin HOME=/root TERM=linux
mount -t proc proc /proc
mount -t sysfs sysfs /sys
# Debian's kernel does not mount devtmpfs by itself for an initramfs (DEVTMPFS_MOUNT is off).
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
# A pty for xterm and anything else that runs a terminal.
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=755 tmpfs /run
exec </dev/null >/dev/console 2>&1
log() { echo "glovebox-init: $*"; }
# prefix P: copies its input to the console line by line, each line prefixed "P: ". A shell loop,
# not sed: busybox sed in a pipe held its output back (tried: not one line reached the console),
# and log lines that come late or never are no use for debugging.
prefix() { while IFS= read -r line; do echo "$1: $line"; done; }
hostname glovebox
log "start, $(cut -d' ' -f1 /proc/uptime) s after boot"

screen=1024x768
app=
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    glovebox.screen=*) screen=${arg#glovebox.screen=} ;;
    glovebox.app=*) app=${arg#glovebox.app=} ;;
  esac
done
case "$screen" in
  *[!0-9x]*|x*|*x|*x*x*|'') log "bad glovebox.screen=$screen, using 1024x768"; screen=1024x768 ;;
  *x*) ;;
  *) log "bad glovebox.screen=$screen, using 1024x768"; screen=1024x768 ;;
esac

ip link set lo up
for m in $(cat /lib/modules/glovebox/order); do
  insmod "/lib/modules/glovebox/$m.ko" || log "insmod $m failed"
done
# virtio_net probes while insmod runs, but wait a little in case the device shows up late.
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
if [ -e /sys/class/net/eth0 ]; then
  # QEMU user networking: the guest is 10.0.2.15, the host side 10.0.2.2.
  ip addr add 10.0.2.15/24 dev eth0
  ip link set eth0 up
  ip route add default via 10.0.2.2
  log "net up: eth0 10.0.2.15/24 via 10.0.2.2"
else
  log "no eth0 (is there a -device virtio-net-pci?); going on without network"
fi

# Xvfb, restarted if it dies (its stale lock and socket are cleaned up by the next one).
(
  while true; do
    Xvfb :0 -screen 0 "${screen}x24" -nolisten tcp -ac 2>&1 | prefix xvfb
    log "Xvfb exited; restarting in 1 s"
    sleep 1
  done
) &
i=0
while [ ! -S /tmp/.X11-unix/X0 ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
if [ -S /tmp/.X11-unix/X0 ]; then
  log "xvfb ready on :0 at ${screen}x24, $(cut -d' ' -f1 /proc/uptime) s after boot"
else
  log "Xvfb has not made /tmp/.X11-unix/X0 after 60 s; starting the guest anyway"
fi
export DISPLAY=:0

if [ -n "$app" ]; then
  if command -v "$app" >/dev/null 2>&1; then
    log "starting $app"
    ( "$app" 2>&1 | prefix "$app" ) &
  else
    log "glovebox.app=$app: no such program in the guest"
  fi
fi

# The guest server's token, when the host gave one: a fw_cfg entry QEMU filled from a 0600 file
# on the host (never the kernel command line, which any host process can read in QEMU's argv).
token_args=
fwcfg=/sys/firmware/qemu_fw_cfg/by_name/opt/glovebox/token/raw
if [ -r "$fwcfg" ]; then
  (umask 077; cat "$fwcfg" >/run/glovebox-token)
  token_args="--token-file /run/glovebox-token"
  log "the guest server takes requests with its token only"
else
  log "no token given: the guest server takes requests without one"
fi
log "ready, $(cut -d' ' -f1 /proc/uptime) s after boot"
set -o pipefail
while true; do
  if [ "$GLOVEBOX_TEST_STUB" = 1 ]; then
    busybox httpd -f -p 8000 -h /www 2>&1 | prefix glovebox-guest
  else
    # shellcheck disable=SC2086 # token_args is empty or two words
    /bin/glovebox-guest serve --listen 0.0.0.0:8000 --display :0 $token_args 2>&1 | prefix glovebox-guest
  fi
  log "glovebox-guest exited with status $?; restarting in 1 s"
  sleep 1
done
EOF
} >"$root/init"
chmod 755 "$root/init"

# ---- Pack ----
# The kernel's built-in initramfs already has /dev/console, which the kernel opens for PID 1
# before /init mounts devtmpfs; making it here too (root only) keeps that true for any kernel.
if [ "$(id -u)" = 0 ]; then mknod -m 600 "$root/dev/console" c 5 1; fi
# lz4 by default. Measured under TCG (QEMU 7.2, Debian's 6.1 kernel, q35 + qboot, boot to the first
# HTTP answer, medians of 5): none 2.65 s and lz4 2.64 s, the same within noise; in an earlier
# round zstd was about 0.1 s and gzip about 0.3 s slower than both (their decompressors run
# emulated). lz4 halves the file (24 -> 11 MB), which QEMU keeps in its memory and the guest copies,
# so it is the default.
(
  cd "$root"
  find . -mindepth 1 | sed "s|^\./||" | LC_ALL=C sort | "$busybox" cpio -o -H newc -R 0:0 2>/dev/null
) | case "$compress" in
  none) cat ;;
  gzip) gzip -6 ;;
  lz4) lz4 -l -1 -q ;; # the legacy frame format, the only one the kernel reads; -9 saves 2 MB for 0.7 s
  zstd) zstd -q -3 ;;
esac >"$work/initrd"
# A hard link: the cached kernel is never written again, only replaced by a new directory. (mv
# refuses to rename a file over another link to itself, so that case is left as it is.)
same_kernel=0
if [ "$out/kernel" -ef "$kcache/kernel" ]; then
  same_kernel=1
else
  ln "$kcache/kernel" "$work/kernel" 2>/dev/null || cp "$kcache/kernel" "$work/kernel"
fi

# Replace: the stamp goes first, so a reader never sees an old stamp with new files or the reverse.
rm -f "$out/stamp"
[ "$same_kernel" = 1 ] || mv -f "$work/kernel" "$out/kernel"
mv -f "$work/initrd" "$out/initrd"
echo "$kind" >"$work/kernel-kind"
mv -f "$work/kernel-kind" "$out/kernel-kind"
echo "$stamp" >"$work/stamp"
mv -f "$work/stamp" "$out/stamp"
echo "build-guest: built $out/kernel ($kind) and $out/initrd ($(du -k "$out/initrd" | cut -f1) KiB, $compress)" >&2
