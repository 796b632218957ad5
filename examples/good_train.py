"""The training script of ``bad_train.py`` written correctly: flake8 --select TP reports nothing.

    flake8 --select TP --tp-target-gpu t4 examples/good_train.py
"""
import argparse
import random

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

VOCAB = 32000
WIDTH = 512


class TokenShards(Dataset):
    """One tokenised example per file, read and decoded per item."""

    def __init__(self, root, indices):
        self.root, self.indices = root, indices

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, i):
        item = torch.load("{}/{}.pt".format(self.root, self.indices[i]))
        return item["tokens"], item["label"]


class Classifier(nn.Module):
    """A small MLP classifier over token ids: about 33 million parameters."""

    def __init__(self, vocab=VOCAB, width=WIDTH, depth=8, n_classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)) for _ in range(depth)]
        )
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, tokens):
        h = self.embed(tokens).mean(dim=1)
        for block in self.blocks:
            h = h + block(h)
        return self.head(self.norm(h))


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = 0
    for tokens, labels in loader:
        logits = model(tokens.to(device, non_blocking=True))
        correct += (logits.argmax(1) == labels.to(device)).sum()
    model.train()
    return correct.item() / len(loader.dataset)


def train_epoch(model, loader, optimizer, scaler, criterion, device, accum_steps, class_weights):
    running = 0.0
    weights = class_weights.to(device)  # moved once, outside the loop
    for step, (tokens, labels) in enumerate(loader):
        tokens = tokens.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            logits = model(tokens)
            loss = criterion(logits, labels) * weights[labels].mean() / accum_steps
        scaler.scale(loss).backward()
        if (step + 1) % accum_steps == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        running += loss.item()  # one sync per step, for logging
    return running / len(loader)


def finetune_probe(features, targets, epochs):
    probe = nn.Linear(features.shape[1], 1)
    bce = nn.BCEWithLogitsLoss()
    opt = torch.optim.SGD(probe.parameters(), lr=0.1)
    for _ in range(epochs):
        opt.zero_grad()
        loss = bce(probe(features), targets)
        loss.backward()
        opt.step()
    return probe


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--accum-steps", type=int, default=4)
    args = parser.parse_args()

    dist.init_process_group("nccl")
    device = torch.device("cuda", dist.get_rank())
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)

    keep = np.random.permutation(4096)[:3000]
    dataset = TokenShards("data/train", keep)
    sampler = DistributedSampler(dataset, shuffle=True)
    train_loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=4, pin_memory=True)
    val_loader = DataLoader(dataset, batch_size=256, num_workers=4, pin_memory=True)

    model = DDP(Classifier().to(device), device_ids=[device.index])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler("cuda")
    criterion = nn.CrossEntropyLoss()
    class_weights = torch.ones(10)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        train_epoch(model, train_loader, optimizer, scaler, criterion, device, args.accum_steps, class_weights)
        print(epoch, evaluate(model, val_loader, device))

    finetune_probe(torch.randn(256, WIDTH), torch.rand(256, 1).round(), epochs=random.randint(3, 5))


if __name__ == "__main__":
    main()
