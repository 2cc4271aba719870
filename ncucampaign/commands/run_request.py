"""What `run` is asked to do, as one frozen value: built from the command line once (`from_args`), or
by `ab` for each of its runs; nothing downstream reads an argv or an argparse namespace (issue 42)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field

from ncucampaign.commands.common import add_ncu_option, chosen_ncu
from ncucampaign.execute.backends.k8s.system import KUBERNETES
from ncucampaign.execute.backends.slurm.system import SLURM

HERE = "here"  # run's backend without --slurm or --k8s: this machine (execute/backends/local.py)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """run's own options (run_slurm and run_k8s add theirs)."""
    parser.add_argument("file", metavar="FILE", nargs="?", help="the campaign (with --resume: default, the one it ran)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these targets (or expanded names)")
    parser.add_argument(
        "--out", metavar="DIR", help="root of run directories (default: runs_dir: or runs/ beside the campaign file)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would run; create nothing")
    parser.add_argument(
        "--samples", type=int, metavar="N", help="samples per target for compare's verdicts, over the campaign's"
    )
    add_ncu_option(parser)
    parser.add_argument("--show-output", action="store_true", help="show ncu's and the application's output live")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="RUN_DIR",
        help="complete a run: skip targets that are ok and unchanged (default: the latest run)",
    )
    parser.add_argument(
        "--rerun-failed",
        action="store_true",
        help="with --resume (implied): run only the targets that failed or are incomplete",
    )
    parser.add_argument("--gpus", metavar="LIST", help="run targets side by side, one per GPU: 0,1,... or all")
    parser.add_argument(
        "--no-share",
        action="store_true",
        help="run every target in its own application run (default: targets with identical run settings share "
        "one, split and verified per target)",
    )
    parser.add_argument(
        "--weigh",
        action="store_true",
        help="after the targets, time every launch of the application once (as `weigh: true` does), so that "
        "findings rank by what they would gain the whole application",
    )
    parser.add_argument(
        "--jobs-per-gpu",
        type=int,
        default=1,
        metavar="N",
        help="ncu processes sharing one GPU (default 1: sharing can disturb the numbers)",
    )


@dataclass(frozen=True)
class KubernetesFlags:
    """The --k8s-... flags, over the campaign's kubernetes: section."""

    image: str | None = None
    namespace: str | None = None
    service_account: str | None = None
    volume: str | None = None  # CLAIM:PATH
    node_selector: tuple[str, ...] = ()  # KEY=VALUE
    tolerations: tuple[str, ...] = ()  # KEY[=VALUE]:EFFECT
    queue: str | None = None
    parallelism: int | None = None

    @property
    def given(self) -> bool:
        return any(getattr(self, f.name) for f in dataclasses.fields(self))


@dataclass(frozen=True)
class RunRequest:
    file: str | None = None
    only: tuple[str, ...] = ()
    out: str | None = None
    dry_run: bool = False
    samples: int | None = None
    ncu_flag: str | None = None  # --ncu
    show_output: bool = False
    resume: str | None = None  # a run directory, or "latest"
    rerun_failed: bool = False
    gpus: str | None = None
    no_share: bool = False
    weigh: bool = False
    jobs_per_gpu: int = 1
    slurm: bool = False
    slurm_args: tuple[str, ...] = ()
    wait: bool = False
    k8s: bool = False
    k8s_flags: KubernetesFlags = field(default_factory=KubernetesFlags)

    @property
    def backend(self) -> str:
        """Where the run goes: here, or the batch system's name (execute/backends/systems.py)."""
        return SLURM.name if self.slurm else KUBERNETES.name if self.k8s else HERE

    @property
    def ncu(self) -> str | None:
        return chosen_ncu(self.ncu_flag)

    def but(self, **changes: object) -> RunRequest:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunRequest:
        return cls(
            file=args.file,
            only=tuple(args.only or ()),
            out=args.out,
            dry_run=args.dry_run,
            samples=args.samples,
            ncu_flag=args.ncu,
            show_output=args.show_output,
            resume="latest" if args.rerun_failed and args.resume is None else args.resume,
            rerun_failed=args.rerun_failed,
            gpus=args.gpus,
            no_share=args.no_share,
            weigh=args.weigh,
            jobs_per_gpu=args.jobs_per_gpu,
            slurm=args.slurm,
            slurm_args=slurm_args_of(args),
            wait=args.wait,
            k8s=args.k8s,
            k8s_flags=kubernetes_flags(args),
        )


def slurm_args_of(args: argparse.Namespace) -> tuple[str, ...]:
    """--slurm-arg, as given (run and plan). argparse turns `--slurm-arg=--` into a list (its
    end-of-options marker): that is no option either."""
    return tuple(arg if isinstance(arg, str) else "--" for arg in args.slurm_arg)


def kubernetes_flags(args: argparse.Namespace) -> KubernetesFlags:
    """The --k8s-... flags (run and plan)."""
    return KubernetesFlags(
        image=args.k8s_image,
        namespace=args.k8s_namespace,
        service_account=args.k8s_service_account,
        volume=args.k8s_volume,
        node_selector=tuple(args.k8s_node_selector),
        tolerations=tuple(args.k8s_toleration),
        queue=args.k8s_queue,
        parallelism=args.k8s_parallelism,
    )
