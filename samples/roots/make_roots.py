"""Build the emulated Ascend nodes under samples/roots/ (run from the repository root).

Each root is a small filesystem tree with the files preflight reads on a real node: os-release,
site-packages ``*.dist-info/METADATA``, the CANN toolkit's ``version.cfg`` / ``compiler/version.info``,
driver and firmware ``version.info``, ``/dev/davinci*``, ``/proc/mounts`` and firewall rules files.
MindSpore's METADATA is copied from the wheel installed in this venv, so its ``Requires-Dist`` is
the real one of 2.10.0. File formats: shared/faults.md §2.1 (version.cfg line as seen on a real
8.0.RC2 install: ``toolkit_running_version=[7.3.0.1.231:8.0.RC2]``).

    .venv/bin/python samples/roots/make_roots.py
"""

from __future__ import annotations

import shutil
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent

MS_DEPS = {"asttokens": "2.4.1", "pillow": "10.4.0", "scipy": "1.13.1", "packaging": "24.1", "psutil": "6.0.0",
           "astunparse": "1.6.3", "safetensors": "0.4.5", "dill": "0.3.8"}  # fmt: skip


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def mindspore_metadata(version: str) -> str:
    """The header of the installed 2.10.0 METADATA (name … Requires-Dist), version replaced."""
    real = metadata.distribution("mindspore").metadata
    lines = [f"Metadata-Version: {real['Metadata-Version']}", "Name: mindspore", f"Version: {version}",
             f"Requires-Python: {real['Requires-Python']}"]  # fmt: skip
    lines += [f"Requires-Dist: {r}" for r in real.get_all("Requires-Dist") or []]
    return "\n".join(lines) + "\n\n"


def packages(root: Path, python: str, versions: dict[str, str | None]) -> None:
    site = root / f"usr/local/lib/python{python}/site-packages"
    for name, ver in versions.items():
        if ver is None:
            continue
        meta = site / f"{name}-{ver}.dist-info" / "METADATA"
        text = mindspore_metadata(ver) if name == "mindspore" else f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n\n"
        write(meta, text)


def cann(root: Path, internal: str, marketing: str) -> None:
    tk = root / "usr/local/Ascend/ascend-toolkit/latest"
    comps = ("runtime", "compiler", "hccl", "opp", "toolkit", "aoe", "ncs", "opp_kernel")
    write(tk / "version.cfg", "".join(f"{c}_running_version=[{internal}:{marketing}]\n" for c in comps))
    write(tk / "compiler/version.info", f"Version={internal}\nversion_dir={marketing}\n")
    write(root / "usr/local/Ascend/ascend-toolkit/set_env.sh", "# CANN environment (emulated)\n")


def driver(root: Path, version: str) -> None:
    write(root / "usr/local/Ascend/driver/version.info", f"Version={version}\nascendhal_version=7.35.23\n")
    write(root / "usr/local/Ascend/firmware/version.info", "Version=7.7.0.1.231\nfirmware_version=1.0\n")


def devices(root: Path, n: int) -> None:
    for i in range(n):
        write(root / f"dev/davinci{i}", "")
    write(root / "dev/davinci_manager", "")


def cpus_mem(root: Path, cpus: int, mem_gib: int) -> None:
    write(root / "proc/cpuinfo", "".join(f"processor\t: {i}\nBogoMIPS\t: 200.00\n\n" for i in range(cpus)))
    kb = mem_gib * 1024 * 1024
    write(root / "proc/meminfo", f"MemTotal:       {kb} kB\nMemFree:        {kb // 2} kB\nMemAvailable:   {kb * 3 // 4} kB\n")


def sysctl_ports(root: Path, reserved: str) -> None:
    write(root / "proc/sys/net/ipv4/ip_local_port_range", "32768\t60999\n")
    write(root / "proc/sys/net/ipv4/ip_local_reserved_ports", reserved + "\n")


def mounts(root: Path, shm: str) -> None:
    write(root / "proc/mounts", f"overlay / overlay rw,relatime 0 0\nshm /dev/shm tmpfs rw,nosuid,nodev,size={shm} 0 0\n")


def ufw(root: Path, rules: list[str]) -> None:
    write(root / "etc/ufw/ufw.conf", "ENABLED=yes\nLOGLEVEL=low\n")
    write(root / "etc/default/ufw", 'IPV6=yes\nDEFAULT_INPUT_POLICY="DROP"\nDEFAULT_OUTPUT_POLICY="ACCEPT"\n')
    body = "\n".join(rules)
    write(root / "etc/ufw/user.rules", f"*filter\n:ufw-user-input - [0:0]\n:ufw-user-output - [0:0]\n\n### RULES ###\n{body}\n\n### END RULES ###\nCOMMIT\n")


GOOD_UFW = [
    "### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in",
    "-A ufw-user-input -p tcp --dport 22 -j ACCEPT",
    "### tuple ### allow udp 4791 0.0.0.0/0 any 0.0.0.0/0 in",
    "-A ufw-user-input -p udp --dport 4791 -j ACCEPT",
    "-A ufw-user-input -p tcp --dport 8118 -j ACCEPT",
    "-A ufw-user-input -p tcp -m multiport --dports 60000:60031 -j ACCEPT",
]


def node(name: str, *, python: str = "3.10", ms: str | None = "2.10.0", numpy: str = "1.26.4",
         protobuf: str = "7.36.2", cann_v: tuple[str, str] | None = ("8.5.0.1.100", "8.5.0"),
         drv: str = "25.2.0", ndev: int = 8, shm: str = "16g", cpus: int = 192, mem_gib: int = 1536,
         reserved: str = "60000-60031", fw: list[str] | None = None,
         nft: str | None = None) -> Path:  # fmt: skip
    root = HERE / name
    if root.exists():
        shutil.rmtree(root)
    write(root / "etc/os-release", 'NAME="Ubuntu"\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n')
    packages(root, python, {"mindspore": ms, "numpy": numpy, "protobuf": protobuf, "mindformers": "1.6.0", **MS_DEPS})
    if cann_v:
        cann(root, *cann_v)
        driver(root, drv)
    devices(root, ndev)
    mounts(root, shm)
    cpus_mem(root, cpus, mem_gib)
    sysctl_ports(root, reserved)
    ufw(root, GOOD_UFW if fw is None else fw)
    if nft is not None:
        write(root / "etc/nftables.conf", nft)
    # The rank table the sample env files name (RANK_TABLE_FILE=/etc/hccl_2x8.json).
    write(root / "etc/hccl_2x8.json", (HERE.parent / "ranktables/good_2x8.json").read_text(encoding="utf-8"))
    return root


def main() -> None:
    node("good")  # CANN 8.5.0 + MindSpore 2.10.0, Python 3.10
    node("clean-9.1", cann_v=("9.1.0.1.100", "9.1.0"), drv="25.5.0")  # no CANN protobuf pin: all silent
    node("cann-8.0rc2", cann_v=("7.3.0.1.231", "8.0.RC2"), drv="24.1.rc2")  # seed era CANN under 2.10
    node("drift", protobuf="3.20.3", numpy="1.23.5")  # the seed's 3.2 pins under MindSpore 2.10
    node("numpy2", numpy="2.1.3")  # allowed by 2.10's METADATA, breaks its binaries
    node("py39", python="3.9")  # no cp39 wheel of 2.10.0
    node("old-driver", drv="24.1.rc2")  # CANN 8.5.0 on an HDK it does not list
    node("cramped", shm="64m", cpus=16, mem_gib=128)  # a container: default /dev/shm, 16 CPUs for 8 NPUs
    node("firewall", fw=[
        "-A ufw-user-input -p tcp --dport 22 -j ACCEPT",
        "-A ufw-user-input -p udp --dport 4791 -j DROP",
    ])  # default input policy DROP, 4791 dropped explicitly, 8118 / 60000+ not allowed  # fmt: skip
    node("unreserved", reserved="")  # HCCL's 60000-60031 inside the ephemeral range, not reserved
    node("nft-drop", fw=GOOD_UFW, nft=(
        "#!/usr/sbin/nft -f\nflush ruleset\ntable inet filter {\n  chain input {\n"
        "    type filter hook input priority 0; policy accept;\n    udp dport 4791 drop\n"
        "    tcp dport { 8118, 8119 } reject\n  }\n}\n"
    ))  # fmt: skip
    node("no-cann", cann_v=None, ndev=0)  # MindSpore without CANN: CANN checks not evaluated


if __name__ == "__main__":
    main()
