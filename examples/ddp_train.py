#!/usr/bin/env python3
"""A small PyTorch DDP training run that reads Slurm's (and torch's) variables, checkpoints, and
continues from its last checkpoint when the job is requeued (SLURM_RESTART_COUNT > 0).

Launch one process per task with srun (see ddp.sbatch): every task reads RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR and MASTER_PORT, which pyslurm-lite sets as Slurm-on-torch users expect.
NCCL on GPUs when CUDA is usable, gloo on CPUs otherwise.

On SIGUSR1 (sbatch --signal=B:USR1@60 reaches the batch shell, which passes it on) or SIGTERM it
saves a checkpoint at the next step and, with --requeue-on-signal, asks to be requeued:
`scontrol requeue $SLURM_JOB_ID`.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STOP = {"signal": 0}


def on_signal(signo, frame):
    STOP["signal"] = signo


def setup():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() and os.environ.get("DDP_FORCE_CPU") != "1"
    if use_cuda:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    dist.init_process_group("nccl" if use_cuda else "gloo", init_method="env://",
                            rank=rank, world_size=world)
    return rank, world, torch.device("cuda", torch.cuda.current_device()) if use_cuda else torch.device("cpu")


def checkpoint_path(args) -> str:
    return os.path.join(args.checkpoint_dir, f"ddp-{os.environ.get('SLURM_JOB_ID', 'local')}.pt")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--checkpoint-every", type=int, default=20)
    p.add_argument("--checkpoint-dir", default=os.environ.get("CKPT_DIR", "checkpoints"))
    p.add_argument("--step-seconds", type=float, default=0.0, help="sleep per step (to test requeue)")
    p.add_argument("--requeue-on-signal", action="store_true")
    args = p.parse_args()
    for s in (signal.SIGUSR1, signal.SIGTERM):
        signal.signal(s, on_signal)
    rank, world, device = setup()
    torch.manual_seed(0)
    model = DDP(nn.Linear(16, 1).to(device), device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = 0
    path = checkpoint_path(args)
    if os.path.exists(path):
        state = torch.load(path, map_location=device)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
    if rank == 0:
        print(f"world={world} device={device.type} restart={os.environ.get('SLURM_RESTART_COUNT', '0')} "
              f"resuming_from_step={start}", flush=True)
    gen = torch.Generator().manual_seed(rank)
    step = start
    for step in range(start, args.steps):
        x = torch.randn(32, 16, generator=gen).to(device)
        loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(args.step_seconds)
        stop = torch.tensor([STOP["signal"]], device=device)
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)  # every rank stops at the same step
        if (step + 1) % args.checkpoint_every == 0 or stop.item():
            save(rank, model, opt, step + 1, path)
        if stop.item():
            if rank == 0:
                print(f"signal {int(stop.item())} at step {step + 1}: checkpoint saved", flush=True)
                if args.requeue_on_signal and os.environ.get("SLURM_JOB_ID"):
                    subprocess.run(["scontrol", "requeue", os.environ["SLURM_JOB_ID"]], check=False)
            dist.destroy_process_group()
            return 0
    # every rank contributes rank+1: all must agree on world*(world+1)/2
    total = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(total)
    print(f"rank {rank} allreduce={total.item():.1f} steps={step + 1} loss={loss.item():.4f}", flush=True)
    # no rank tears its process group down while another still talks to it (gloo can abort
    # a rank at exit otherwise: "terminate called without an active exception")
    dist.barrier()
    dist.destroy_process_group()
    return 0


def save(rank, model, opt, step, path):
    if rank == 0:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = path + ".tmp"
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
        os.replace(tmp, path)  # a crash mid-save never leaves a torn checkpoint
    dist.barrier()


if __name__ == "__main__":
    sys.exit(main())
