"""The training script of the model rules' end-to-end runs (``test_e2e_model_rules``): real CPU
training under ``ph.watch`` with every collection every step, one scenario per run (``SCENARIO``):

- ``healthy``: an MLP initialised for its activations (Kaiming before the ReLU, Xavier before the
  tanh) learning a linear teacher's labels from fresh samples each step, evaluated every 3 steps
  on two fixed batches of the same distribution: nothing for any tensor rule to find;
- ``vanish``: six tanh layers initialised with a standard deviation of 0.01: the first layers'
  gradients are below 1e-7 from step 0;
- ``nan``: the healthy run whose input holds a NaN from step 20;
- ``overfit``: a wide MLP memorising 32 randomly labelled samples, evaluated on fresh ones;
- ``broken``: the MLP broken every way the other rules look for: its first layer's weights drawn
  with a standard deviation of 200 (a variance past TensorVariance's 1e4) and its bias at -1e4
  (every ReLU unit after it dead, its outputs all zero), the second layer's bias at 5 (the tanh
  after it saturated; the layers' output variances far apart), that bias and the last layer
  frozen, so nothing learns (no gradient passes the dead ReLUs: weights unchanged, updates of zero,
  a flat validation loss); labels 97 % class 0; a 4 s pause at step 15 (a stall).

With ``STOP_ON`` set the run goes on past ``STEPS`` until the hub asks it to stop (``GIVE_UP_S``
is a safety net, not a bound the test checks). It prints ``STOPPED`` and ``FINISHED`` lines.
"""

SCRIPT = r"""
import json, os, time
import torch
import profilerhub as ph

SCENARIO = os.environ["SCENARIO"]
RULES = json.loads(os.environ["RULES"])
STOP_ON = json.loads(os.environ.get("STOP_ON", "[]"))
kw = {"output": os.environ["OUTPUT"]} if os.environ.get("OUTPUT") else {}
ph.init(job=f"model-{SCENARIO}", rules=RULES, stop_on=STOP_ON, chunk_interval_s=0.5,
        sample_interval_s=0.5, **kw)
torch.manual_seed(0)
nn = torch.nn
teacher = torch.randn(16, 4)
def batch(n, random_labels=False):
    x = torch.randn(n, 16)
    y = torch.randint(0, 4, (n,)) if random_labels else (x @ teacher).argmax(1)
    if SCENARIO == "broken":
        y = torch.where(torch.rand(n) < 0.97, 0, torch.randint(1, 4, (n,)))
    return x, y

if SCENARIO == "vanish":
    layers = []
    for i in range(6):
        lin = nn.Linear(16 if i == 0 else 32, 32)
        nn.init.normal_(lin.weight, std=0.01)
        nn.init.zeros_(lin.bias)
        layers += [lin, nn.Tanh()]
    model = nn.Sequential(*layers, nn.Linear(32, 4))
else:
    width = 256 if SCENARIO == "overfit" else 32
    model = nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Linear(width, 32), nn.Tanh(), nn.Linear(32, 4))
    nn.init.kaiming_normal_(model[0].weight, nonlinearity="relu")
    for m in (model[2], model[4]):
        nn.init.xavier_normal_(m.weight)
    for m in (model[0], model[2], model[4]):
        nn.init.zeros_(m.bias)
    if SCENARIO == "broken":
        nn.init.normal_(model[0].weight, std=200.0)
        nn.init.constant_(model[0].bias, -1e4)
        nn.init.constant_(model[2].bias, 5.0)
        for p in (model[2].bias, model[4].weight, model[4].bias):
            p.requires_grad_(False)
lr = 0.1
if SCENARIO == "overfit":
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
else:
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
ALL = ["weights", "biases", "gradients", "activations", "losses", "optimizer_variables", "labels"]
ph.watch(model, opt, loss_fn, collections=ALL, every=1)
train = batch(32, random_labels=True) if SCENARIO == "overfit" else None
val = [batch(256, random_labels=SCENARIO == "overfit") for _ in range(2)]
steps = int(os.environ.get("STEPS", "60"))
give_up = time.monotonic() + float(os.environ.get("GIVE_UP_S", "600"))
stopped, i = None, 0
try:
    while i < steps or (STOP_ON and time.monotonic() < give_up):
        with ph.step(i):
            x, y = train if train is not None else batch(256)  # fresh samples each step: nothing to overfit
            if SCENARIO == "nan" and i >= 20:
                x = x.clone(); x[0, 0] = float("nan")
            loss = loss_fn(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if SCENARIO == "broken" and i == 15:
                time.sleep(4)  # the stall StalledTrainingRule is to find (threshold 2 s)
        if i % 3 == 2:
            with ph.mode("eval"), torch.no_grad():
                for vx, vy in val:
                    loss_fn(model(vx), vy)
        i += 1
        if STOP_ON and i >= steps:
            time.sleep(0.05)  # past the planned steps: wait for the hub's stop (a safety net bounds it)
except ph.StopTraining as stop:
    stopped = {"rule": stop.rule, "step": i}
print("STOPPED " + json.dumps(stopped), flush=True)
print("FINISHED " + json.dumps(ph.finish()), flush=True)
"""
