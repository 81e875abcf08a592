"""What `rmm bench rerank` shows: the figures as a table per family and the learning curves
as a PNG."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import MissingDependencyError

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def report(figures: dict) -> str:
    settings = ", ".join(f"{k}={v}" for k, v in figures["settings"].items()) or "defaults"
    lines = [f"settings: {settings}; held-out conversations, exploration off; "
             "online: second half of the held-out questions answered in order"]
    for name, fam in figures["families"].items():
        metrics = list(fam["none"])
        lines += [f"{name} ({fam['held-out questions']} held-out questions)",
                  f"  {'':28s}" + "".join(f"{m:>12s}" for m in metrics)]
        rows = [("none (hand-set fusion)", fam["none"])]
        if "transfer" in fam:
            rows.append((f"trained ({figures['epochs']} epoch(s))", fam["transfer"]))
        if "shipped" in fam:
            rows.append(("shipped weights", fam["shipped"]))
        if "online" in fam:
            rows += [(f"none, 2nd half ({fam['online']['questions']} q)",
                      fam["online"]["none second half"]),
                     (f"online from {figures['online_from']}, 2nd half",
                      fam["online"]["second half"])]
        for label, values in rows:
            base = fam["online"]["none second half"] if label.startswith("online") \
                else fam["none"]
            lines.append(f"  {label:28s}" + "".join(
                f"{values[m]:7.1f} ({values[m] - base[m]:+4.1f})" if label[:4] != "none"
                else f"{values[m]:12.1f}" for m in metrics))
        lines += _ceiling_lines(fam.get("ceiling", {}))
    t = figures.get("transfer")
    if t:
        lines.append(f"training: {t['train_steps']} feedback steps; cited share per window: "
                     + " ".join(f"{s:.2f}" for s in t["cited_share_per_window"]))
        if "weights" in t:
            lines.append("weights: " + ", ".join(f"{k} {v:+.2f}" for k, v in t["weights"].items()))
        lines += [f"feedback step: median {t['feedback_ms_median']:.2f} ms, p95 "
                  f"{t['feedback_ms_p95']:.2f} ms (gradient + logged step)",
                  f"rerank 20 candidates: median {t['rerank20_ms_median']:.3f} ms, p95 "
                  f"{t['rerank20_ms_p95']:.3f} ms (features included)"]
        bound = t.get("supervised_bound")
        if bound:
            lines.append(
                f"supervised bound ({bound['epochs']} epochs, Adam {bound['lr']:g}), R_any@5: "
                f"train {bound['train_before']:.1f} -> {bound['train_after']:.1f}, held-out "
                f"{bound['test_before']:.1f} -> {bound['test_after']:.1f}")
    return "\n".join(lines)


def _ceiling_lines(ceiling: dict) -> list[str]:
    """The headroom of `--ceiling`, one line per pool size."""
    if not ceiling:
        return []
    lines = ["  ceiling, R_any@5 / Rtok@1000 within a pool of K candidates (fit: the "
             "reranker's form, fully supervised)"]
    for k, rows in ceiling.items():
        if not rows:
            continue
        a, t = rows["none"]["R_any@5"], rows["none"]["Rtok@1000"]
        lines.append(f"    K={k:<4}" + ", ".join(
            f"{label} {v['R_any@5']:.1f}/{v['Rtok@1000']:.1f}"
            + ("" if label == "none" else
               f" ({v['R_any@5'] - a:+.1f}/{v['Rtok@1000'] - t:+.1f})")
            for label, v in rows.items()))
    return lines


def plot_curves(figures: dict, window: int, path: str) -> None:
    """The transfer training's cited share and each family's online R_any@5 (running mean)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", "bench") from exc
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    if "transfer" in figures:
        draw_curve(left, figures["transfer"]["cited_share_per_window"], window)
    for name, fam in figures["families"].items():
        if "online" in fam:
            for key, style in (("curve", "-"), ("none curve", "--")):
                curve = np.asarray(fam["online"][key], float)
                right.plot(np.arange(1, len(curve) + 1), 100 * np.cumsum(curve)
                           / np.arange(1, len(curve) + 1), style,
                           label=f"{name} {'online' if key == 'curve' else 'none'}")
    right.set_xlabel("held-out questions answered")
    right.set_ylabel("R_any@5 so far (exploration off)")
    right.set_title("online learning")
    right.grid(alpha=0.3)
    if right.lines:
        right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def draw_curve(ax: Axes, curve: list[float], window: int) -> None:
    """The learning curve on a matplotlib `ax` (the PNG above, or a notebook's inline plot)."""
    ax.plot([window * (i + 1) for i in range(len(curve))], curve, marker="o")
    ax.set_xlabel("feedback steps")
    ax.set_ylabel(f"share of kept memories cited (per {window} steps)")
    ax.set_title("REINFORCE reranker, oracle citations")
    ax.grid(alpha=0.3)
