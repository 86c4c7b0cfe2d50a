#!/usr/bin/env python3
"""Joins loopc's GPU benchmark results with the peers' figures into one markdown table.

bench/gpu/run.sh writes one line per case to a TSV file (name, sample:kernel, --set values, peer family, status,
wall seconds, then loopc bench's JSON or the error) and saves gpu_anchors.py's JSON lines; this script matches each
case with the peer figures measured at the same sizes and prints the table. Standard library only: it runs on the
GPU machine, which has no package registry.

The ratio compares times, not rates: the peer's time is recovered from its figure and the peer script's own
byte or flop count, so loopc and the peer need not count bytes the same way. Ratio = peer ms / loopc ms, above 1
means loopc is faster. A ratio is given only when loopc ran on the GPU at exactly the peer's sizes.
"""
import argparse
import json
import sys

COPY_OP = "copy 2^28 f32"
BANDWIDTH, COMPUTE = "GB/s", "GFLOP/s"


class Anchors:
    """The JSON lines of one gpu_anchors.py run (other lines, such as its SUMMARY of Python reprs, are skipped)."""

    def __init__(self, lines):
        self.rows = []
        for line in lines:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "error" not in row:
                self.rows.append(row)

    def find(self, **fields):
        for row in self.rows:
            if all(row.get(key) == value for key, value in fields.items()):
                return row
        return None

    def device(self):
        return self.find(kind="device")

    def copy_gbps(self):
        row = self.find(kind="bandwidth", op=COPY_OP)
        return row["gbps"] if row else None

    def fp32_peak_gflops(self):
        row = self.device()
        return row["fp32_peak_tflops"] * 1e3 if row and "fp32_peak_tflops" in row else None


class PeerFigure:
    """One peer's figure for a case: its label, the figure as text, and its time in seconds when the peer ran at
    the case's sizes (None otherwise, with the reason in `note`)."""

    def __init__(self, label, figure, seconds=None, note=""):
        self.label, self.figure, self.seconds, self.note = label, figure, seconds, note


# --- the peer families: each maps a case's sizes (and kernel) to the matching anchors rows.

def fixed_size_bandwidth(label, ops_and_bytes, required):
    """A peer measured at one fixed size: `ops_and_bytes` lists (anchors op, bytes it counts); the peer's time is
    the sum over the ops (sum_and_max's peer is two torch calls)."""

    def match(anchors, sizes, kernel):
        rows = [anchors.find(kind="bandwidth", op=op) for op, _ in ops_and_bytes]
        if any(row is None for row in rows):
            return [PeerFigure(label, "not in the anchors' output")]
        figure = " + ".join(f"{row['gbps']:.0f}" for row in rows) + " GB/s"
        shown = sizes_text(" ".join(f"{name}={value}" for name, value in required.items()))
        if any(sizes.get(name) != value for name, value in required.items()):
            return [PeerFigure(label, figure, note=f"peer at {shown}")]
        seconds = sum(count / (row["gbps"] * 1e9) for row, (_, count) in zip(rows, ops_and_bytes))
        return [PeerFigure(label, figure, seconds)]

    return match, BANDWIDTH


def jacobi_stencil(anchors, sizes, kernel):
    label = "torch conv2d 3x3"
    row = anchors.find(kind="stencil", hw=8192)
    if row is None:
        return [PeerFigure(label, "not in the anchors' output")]
    figure = f"{row['gbps']:.0f} GB/s"
    if sizes.get("N") != 8192 or sizes.get("steps") != 1:
        return [PeerFigure(label, figure, note="peer at N = 8192, 1 step")]
    return [PeerFigure(label, figure, 2 * 8192 * 8192 * 4 / (row["gbps"] * 1e9))]


def sgemm(impl, label):
    def match(anchors, sizes, kernel):
        n = sizes.get("M")
        if not (n == sizes.get("N") == sizes.get("K")):
            return [PeerFigure(label, "-", note="peer only for square sizes")]
        row = anchors.find(kind="sgemm", impl=impl, n=n)
        if row is None:
            return [PeerFigure(label, "-", note=f"peer not measured at {n}")]
        return [PeerFigure(label, f"{row['tflops']:.2f} TFLOP/s", 2 * n**3 / (row["tflops"] * 1e12))]

    return match


def cudnn_single_channel(anchors, sizes, kernel):
    label = "cuDNN conv2d 1 channel"
    filter_size = int(kernel.rsplit("x", 1)[-1])  # conv2d_5x5 -> 5
    hw = sizes.get("H")
    row = anchors.find(kind="conv", impl="cuDNN fp32 single channel (valid)", hw=8192, k=filter_size)
    if row is None:
        return [PeerFigure(label, "-", note=f"peer not measured for {filter_size}x{filter_size}")]
    figure = rate_text(row["gflops"], COMPUTE)
    if hw != 8192 or sizes.get("W") != 8192:
        return [PeerFigure(label, figure, note="peer at H = W = 8192")]
    out = 8192 - filter_size + 1
    return [PeerFigure(label, figure, 2 * filter_size**2 * out * out / (row["gflops"] * 1e9))]


def cudnn_channels(padding):
    """cuDNN's convolution of Ic = Oc channels: `valid` (the anchors') or `same` (peers.py's)."""
    def figure(anchors, sizes, kernel):
        label = "cuDNN conv2d" if padding == "valid" else "cuDNN conv2d, padded"
        channels, hw, k = sizes.get("Ic"), sizes.get("H"), sizes.get("K")
        if channels != sizes.get("Oc") or hw != sizes.get("W"):
            return [PeerFigure(label, "-", note="peer only for Ic = Oc, H = W")]
        row = anchors.find(kind="conv", impl=f"cuDNN fp32 ({padding})", ch=f"{channels}->{channels}",
                           hw=hw, k=k)
        if row is None:
            return [PeerFigure(label, "-", note=f"peer not measured at {channels} channels, {hw}^2, {k}x{k}")]
        out = hw - k + 1 if padding == "valid" else hw
        return [PeerFigure(label, f"{row['tflops']:.2f} TFLOP/s",
                           2 * channels * channels * k * k * out * out / (row["tflops"] * 1e12))]
    return figure


def program_time(label, op, required):
    """A peer timed as a whole program (peers.py), at one size."""
    def match(anchors, sizes, kernel):
        row = anchors.find(kind="program", op=op)
        if row is None:
            return [PeerFigure(label, "not in the anchors' output")]
        figure = f"{row['ms']:.3f} ms"
        if any(sizes.get(name) != value for name, value in required.items()):
            shown = sizes_text(" ".join(f"{name}={value}" for name, value in required.items()))
            return [PeerFigure(label, figure, note=f"peer at {shown}")]
        return [PeerFigure(label, figure, row["ms"] * 1e-3)]

    return match


N28 = 1 << 28
FAMILIES = {
    "torch_dot": fixed_size_bandwidth("torch.dot", [("torch.dot 2^28 f32", 2 * N28 * 4)], {"N": N28}),
    "torch_sum_amax": fixed_size_bandwidth(
        "torch.sum + torch.amax", [("torch.sum 2^28 f32", N28 * 4), ("torch.amax 2^28 f32", N28 * 4)], {"N": N28}),
    "torch_flip": fixed_size_bandwidth("torch.flip", [("torch.flip (reversal) 2^28 f32", 2 * N28 * 4)], {"N": N28}),
    "torch_transpose": fixed_size_bandwidth(
        "torch .t().contiguous()", [("transpose 8192^2 f32 (torch .t().contiguous())", 2 * 8192**2 * 4)],
        {"M": 8192, "N": 8192}),
    "cublas_mv": fixed_size_bandwidth(
        "cuBLAS sgemv", [("MV 16384^2 f32 (cuBLAS sgemv)", 16384**2 * 4)], {"M": 16384, "N": 16384}),
    "cublas_tmv": fixed_size_bandwidth(
        "cuBLAS sgemv T", [("TMV 16384^2 f32 (cuBLAS sgemv T)", 16384**2 * 4)], {"M": 16384, "N": 16384}),
    "torch_softmax": fixed_size_bandwidth(
        "torch.softmax", [("softmax rows 8192^2 f32", 2 * 8192**2 * 4)], {"R": 8192, "C": 8192}),
    "torch_jacobi": (jacobi_stencil, BANDWIDTH),
    # Measured by bench/gpu/peers.py, in the same run.
    "torch_cumsum": fixed_size_bandwidth("torch.cumsum", [("torch.cumsum 2^28 f32", 2 * N28 * 4)], {"N": N28}),
    "torch_histc256": fixed_size_bandwidth(
        "torch.histc", [("torch.histc 256 bins 2^28 f32", N28 * 4)], {"N": N28, "B": 256}),
    "torch_mv4": fixed_size_bandwidth(
        "torch.mv", [("torch.mv 4 x 2^26 f32", (N28 + (1 << 26)) * 4)], {"M": 4, "N": 1 << 26}),
    "torch_var_mean": fixed_size_bandwidth(
        "torch.var_mean", [("torch.var_mean rows 8192^2 f32", 8192**2 * 4)], {"R": 8192, "C": 8192}),
    "torch_histc65536": fixed_size_bandwidth(
        "torch.histc", [("torch.histc 65536 bins 2^28 f32", N28 * 4)], {"N": N28, "B": 65536}),
    "cublas_sgemm": (sgemm("cuBLAS fp32", "cuBLAS SGEMM"), COMPUTE),
    "triton_sgemm": (sgemm("Triton fp32 ieee", "Triton matmul (ieee)"), COMPUTE),
    "cudnn_conv1": (cudnn_single_channel, COMPUTE),
    "cudnn_conv64": (cudnn_channels("valid"), COMPUTE),
    "cudnn_conv64_same": (cudnn_channels("same"), COMPUTE),
    "torch_attention_block": (program_time(
        "torch (layer_norm, matmuls, masked softmax)", "attention block T=1024 D=768 NH=12 HD=64 (torch)",
        {"T": 1024, "D": 768, "NH": 12, "HD": 64}), COMPUTE),
}


# --- formatting

def power_of_two(value):
    if value & (value - 1) == 0:
        return f"2^{value.bit_length() - 1}"
    return str(value)


def sizes_text(values):
    """'M=8192 N=8192' -> 'M = 8192, N = 8192', with 2^k for powers of two from 2^20."""
    parts = []
    for pair in values.split():
        name, _, value = pair.partition("=")
        shown = power_of_two(int(value)) if value.isdigit() and int(value) >= 1 << 20 else value
        parts.append(f"{name} = {shown}")
    return ", ".join(parts)


def rate_text(value, unit):
    if value is None:
        return "-"
    if unit == COMPUTE and value >= 100:
        return f"{value / 1e3:.2f} TFLOP/s"
    return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"


def parse_sizes(values):
    sizes = {}
    for pair in values.split():
        name, _, value = pair.partition("=")
        try:
            sizes[name] = int(value)
        except ValueError:
            sizes[name] = value
    return sizes


class Case:
    """One line of run.sh's loopc.tsv."""

    def __init__(self, line):
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 7:
            raise ValueError(f"expected 7 tab-separated fields, got {len(fields)}: {line!r}")
        self.name, self.sample_kernel, self.values, self.peers, self.status, self.wall, payload = fields
        self.kernel = self.sample_kernel.split(":", 1)[-1]
        self.result = json.loads(payload) if self.status == "ok" else None
        self.error = payload if self.status != "ok" else ""
        self.sizes = self.result.get("sizes", {}) if self.result else parse_sizes(self.values)


def table_rows(cases, anchors):
    """The table's rows as lists of cells, and the notes the rows refer to."""
    rows, notes = [], []
    copy_gbps, peak_gflops = anchors.copy_gbps(), anchors.fp32_peak_gflops()
    for case in cases:
        families = [family for family in case.peers.split(",") if family]
        unknown = [family for family in families if family not in FAMILIES]
        if unknown:
            raise ValueError(f"case {case.name}: unknown peer family {', '.join(unknown)}")
        unit = FAMILIES[families[0]][1] if families else BANDWIDTH
        if case.result:
            result = case.result
            loopc_ms = f"{result['median_ms']:.3f}"
            # What the performance model predicted for this run (loopc bench
            # prints it on a GPU it knows), with the launch's bound.
            predicted = (f"{result['predicted_ms']:.3f} ({result.get('predicted_bound', '?')})"
                         if "predicted_ms" in result else "-")
            rate = result.get("gbytes_per_s") if unit == BANDWIDTH else result.get("gflops")
            loopc_rate = ("~" if result.get("approximate") else "") + rate_text(rate, unit)
            # The limits were measured on the peer run's GPU.
            limit = (copy_gbps if unit == BANDWIDTH else peak_gflops) if result.get("device") == "gpu" else None
            of_limit = f"{rate / limit:.2f}" if rate is not None and limit else "-"
        else:
            loopc_ms, loopc_rate, of_limit, predicted = case.status, "-", "-", "-"
            notes.append(f"{case.name} ({sizes_text(case.values)}): {case.status}: {case.error}")
        peers = []
        for family in families:
            peers += FAMILIES[family][0](anchors, case.sizes, case.kernel)
        if not peers:
            peers = [PeerFigure("none", "-")]
        for peer in peers:
            ratio = "-"
            if case.result and peer.seconds and case.result.get("device") == "gpu":
                ratio = f"{peer.seconds * 1e3 / case.result['median_ms']:.2f}"
            peer_ms = f"{peer.seconds * 1e3:.3f}" if peer.seconds else "-"
            peer_label = peer.label + (f" ({peer.note})" if peer.note else "")
            rows.append([case.name, sizes_text(case.values), loopc_ms, predicted, loopc_rate, of_limit,
                         peer_label, peer.figure, peer_ms, ratio])
    return rows, notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loopc", required=True, help="run.sh's loopc.tsv")
    parser.add_argument("--anchors", required=True, help="gpu_anchors.py's output (JSON lines)")
    parser.add_argument("--device-name", default="unknown device")
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("--date", default="unknown date")
    parser.add_argument("--anchors-source", default="")
    parser.add_argument("--repeat", default="?")
    parser.add_argument("--total-seconds", default="?")
    args = parser.parse_args()

    with open(args.loopc) as file:
        cases = [Case(line) for line in file if line.strip()]
    with open(args.anchors) as file:
        anchors = Anchors(file)

    rows, notes = table_rows(cases, anchors)
    device = anchors.device()
    devices = {case.result.get("device") for case in cases if case.result}
    print(f"Device: {args.device_name}; loopc --device {', '.join(sorted(devices)) or '-'}")
    print(f"Date: {args.date} · commit: {args.commit} · loopc bench --repeat {args.repeat}, median of the runs;"
          f" the script took {args.total_seconds} s")
    peer_device = f" on {device['name']}, torch {device.get('torch', '?')}" if device else ""
    print(f"Peers: {args.anchors_source or 'given anchors file'}{peer_device}")
    limits = []
    if anchors.copy_gbps():
        limits.append(f"device copy {anchors.copy_gbps():.0f} GB/s (read + write)")
    if anchors.fp32_peak_gflops():
        limits.append(f"FP32 peak {anchors.fp32_peak_gflops() / 1e3:.1f} TFLOP/s")
    if limits:
        print(f"Limits (peer run): {', '.join(limits)}")
    print()
    header = ["kernel", "sizes", "loopc ms", "predicted ms", "loopc rate", "of limit", "peer", "peer figure",
              "peer ms", "loopc / peer"]
    print("| " + " | ".join(header) + " |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    print("loopc / peer = peer ms / loopc ms (above 1: loopc is faster); the peer's ms comes from its figure and "
          "its own byte or flop count, and is given only when the peer ran at the same sizes. loopc's GB/s counts "
          "each array once (a lower bound); \"predicted ms\" is what the performance model (docs/perf.md) said before "
          "the run, with the bound it named; \"of limit\" divides loopc's rate by the peer run's copy bandwidth or "
          "FP32 peak. jacobi2d's step is two sweeps in loopc (the stencil into B, then B copied back into A), one "
          "in torch's conv2d.")
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError, KeyError) as error:
        print(f"report.py: {error}", file=sys.stderr)
        sys.exit(1)
