"""A DDP training script with one instance of every bug flake8-torch-preflight finds.

    flake8 --select TP --tp-target-gpu t4 examples/bad_train.py

Each finding is marked with a trailing ``# TPxxx`` comment; ``tests/test_examples.py``
checks that the plugin reports exactly these lines.  ``good_train.py`` is the same
script written correctly and must stay silent.
"""
import argparse

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

VOCAB = 32000
WIDTH = 4096


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
    """A wide MLP classifier over token ids: about 1.2 billion parameters."""

    def __init__(self, vocab=VOCAB, width=WIDTH, depth=8, n_classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * width, width))
             for _ in range(depth)]
        )
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, tokens):
        h = self.embed(tokens).mean(dim=1)
        for block in self.blocks:
            h = h + block(h)
        return self.head(self.norm(h))


def evaluate(model, loader, device):
    model.eval()
    correct = 0
    for tokens, labels in loader:
        logits = model(tokens.to(device))  # autograd records every batch for nothing  # TP002
        correct += (logits.argmax(1) == labels.to(device)).sum().item()
    return correct / len(loader.dataset)


def train_epoch(model, loader, optimizer, criterion, device, class_weights):
    losses = []
    for tokens, labels in loader:
        tokens, labels = tokens.to(device), labels.to(device)
        weights = class_weights.to(device)  # the same tensor copied every step  # TP011
        optimizer.zero_grad()
        logits = model(tokens)
        loss = criterion(F.softmax(logits, dim=1), labels) * weights[labels].mean()  # TP006
        loss.backward()
        optimizer.step()
        losses.append(loss)  # keeps every step's graph alive  # TP001
        grad_norms = [p.grad.norm().item() for p in model.parameters()]  # one sync per parameter  # TP010
    return losses, grad_norms


def train_epoch_amp(model, loader, optimizer, criterion, device):
    for tokens, labels in loader:
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = criterion(model(tokens.to(device)), labels.to(device))
        loss.backward()  # fp16 gradients underflow without a GradScaler  # TP013
        optimizer.step()


def train_epoch_accumulate(model, loader, optimizer, criterion, device, accum_steps):
    for step, (tokens, labels) in enumerate(loader):
        criterion(model(tokens.to(device)), labels.to(device)).backward()  # never divided by accum_steps  # TP004
        if (step + 1) % accum_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clips the sum, not the mean
            optimizer.step()
            optimizer.zero_grad()


def finetune_probe(features, targets, epochs):
    probe = nn.Linear(features.shape[1], 1)
    bce = nn.BCELoss()
    opt = torch.optim.SGD(probe.parameters(), lr=0.1)
    for _ in range(epochs):
        loss = bce(probe(features), targets)  # raw logits into BCELoss  # TP007
        loss.backward()  # TP003
        opt.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--accum-steps", type=int, default=4)
    args = parser.parse_args()

    dist.init_process_group("nccl")
    device = torch.device("cuda", dist.get_rank())
    torch.manual_seed(0)

    keep = np.random.permutation(4096)[:3000]  # numpy draws, but only torch was seeded  # TP009
    dataset = TokenShards("data/train", keep)
    train_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)  # TP005  # TP012
    val_loader = DataLoader(dataset, batch_size=256, num_workers=4, pin_memory=True)

    model = DDP(Classifier().to(device), device_ids=[device.index])  # TPV001
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    criterion = nn.CrossEntropyLoss()
    class_weights = torch.ones(10)

    for epoch in range(args.epochs):
        model.train()
        train_epoch(model, train_loader, optimizer, criterion, device, class_weights)
        train_epoch_amp(model, train_loader, optimizer, criterion, device)
        train_epoch_accumulate(model, train_loader, optimizer, criterion, device, args.accum_steps)
        print(epoch, evaluate(model, val_loader, device))

    finetune_probe(torch.randn(256, WIDTH), torch.rand(256, 1).round(), epochs=3)
    for epoch in range(args.epochs):
        print(epoch, evaluate(model, val_loader, device))  # eval() with no train() after it  # TP008
        train_epoch(model, train_loader, optimizer, criterion, device, class_weights)


if __name__ == "__main__":
    main()
