"""A tiny PyTorch Lightning training run, started by the test with `srun` in a batch job of two
nodes, one task each: Lightning takes the ranks, world size and rendezvous (node name and port)
from our SLURM_* variables, trains with DDP over gloo, and each rank prints what it saw and an
all-reduced sum, so that the test can check that both ranks joined one process group."""

import os
import sys

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main(steps: int) -> None:
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    trainer = pl.Trainer(accelerator="cpu", devices=1, num_nodes=2, strategy="ddp",
                         max_steps=steps, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Tiny(), DataLoader(data, batch_size=8))
    total = trainer.strategy.reduce(torch.tensor(float(trainer.global_rank + 1)), reduce_op="sum")
    env = trainer.strategy.cluster_environment
    print(f"rank {trainer.global_rank} of {trainer.world_size} env {type(env).__name__} "
          f"node {os.environ['SLURMD_NODENAME']} master {env.main_address}:{env.main_port} "
          f"steps {trainer.global_step} sum {total.item():.0f}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
