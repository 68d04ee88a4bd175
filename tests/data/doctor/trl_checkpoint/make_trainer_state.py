# Produce a real TRL trainer_state.json with the built-in tiny model (fixture for rlvr doctor).
import os, re
os.environ["OMP_NUM_THREADS"]="1"; os.environ["HF_HUB_OFFLINE"]="1"
import torch; torch.set_num_threads(1)
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer
from rlvr.models import build_builtin, load_model, load_tokenizer
from rlvr.arithmetic import generate
ref = str(build_builtin("tiny"))
tok = load_tokenizer(ref); model = load_model(ref)
rows = generate(64, 0)
ds = Dataset.from_list([{"prompt": r["question"] + "=", "answer": r["answer"]} for r in rows])
def fmt(completions, **kw):
    return [1.0 if re.search(r"<answer>.*?</answer>", c) else 0.0 for c in completions]
def correct(completions, answer, **kw):
    out = []
    for c, a in zip(completions, answer):
        m = re.search(r"<answer>(.*?)</answer>", c)
        out.append(1.0 if m and m.group(1).strip() == a else 0.0)
    return out
cfg = GRPOConfig(output_dir="/tmp/d9/out", num_generations=8, max_completion_length=16, per_device_train_batch_size=16,
    gradient_accumulation_steps=1, max_steps=12, logging_steps=1, save_steps=12, learning_rate=1e-4, beta=0.01,
    loss_type="grpo", use_cpu=True, bf16=False, report_to="none", temperature=1.0, seed=3407, gradient_checkpointing=False)
GRPOTrainer(model=model, processing_class=tok, reward_funcs=[fmt, correct], args=cfg, train_dataset=ds).train()
