"""Every shipped config loads into its dataclass; bad keys and values are named with their fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.config_loader import ConfigError, load_config
from jobs.smoke import CONFIGS, DEFAULT_CONFIG, SmokeConfig

TRAIN_SMOKE = Path(__file__).resolve().parents[2] / "jobs" / "configs" / "train-smoke.yaml"


def test_the_smoke_config_loads_its_stage_configs_and_accepts_list_overrides():
    from jobs.evaluate import EvalConfig
    from jobs.train import TrainJobConfig

    cfg = load_config(SmokeConfig, DEFAULT_CONFIG, ["train_overrides=[trainer.max_steps=3]"])
    assert cfg.train_overrides == ("trainer.max_steps=3",)
    assert load_config(TrainJobConfig, cfg.train_config, cfg.train_overrides).trainer.max_steps == 3
    assert load_config(EvalConfig, cfg.eval_config).serving.preset == "tiny-agent-rows-pi"


def test_a_job_given_a_bad_value_exits_with_the_fix_and_runs_nothing(tmp_path):
    from jobs.cli import job_main
    from jobs.train import DEFAULT_CONFIG, TrainJobConfig

    ran = []
    with pytest.raises(SystemExit, match="choose from pi, opencode, hermes"):
        job_main(TrainJobConfig, DEFAULT_CONFIG, ran.append, "train", ["harnesses=[cursor]"])
    assert ran == []


@pytest.mark.parametrize("name", ["learning-check.yaml", "smoke.yaml"])
def test_the_learning_runs_train_the_row_count_family_from_its_own_agent_in_their_harnesses(name: str):
    from actors.models import load_preset
    from actors.sft.tiny_agent import AGENTS
    from jobs.evaluate import EvalConfig
    from jobs.smoke import CONFIGS, locate
    from jobs.train import TrainJobConfig

    cfg = load_config(SmokeConfig, CONFIGS / name)
    train = load_config(TrainJobConfig, locate(cfg.train_config))
    evaluate = load_config(EvalConfig, locate(cfg.eval_config))
    assert train.tasks.set == evaluate.tasks.set == "row-count"
    assert train.serving == evaluate.serving and train.harnesses == evaluate.harnesses  # the same server
    temperature = (train.rollouts.temperature, evaluate.rollouts.temperature)
    assert temperature == (0.7, 0.7 if name == "learning-check.yaml" else 0)
    recipe = AGENTS[load_preset(train.serving.preset).model]
    assert recipe.family == "row-count" and set(train.harnesses) <= set(recipe.harnesses)
    assert evaluate.include_base and evaluate.checkpoints == 0  # the start and every checkpoint


def test_the_three_harness_smoke_trains_and_evaluates_pi_opencode_and_hermes():
    from jobs.evaluate import EvalConfig
    from jobs.smoke import CONFIGS, locate
    from jobs.train import TrainJobConfig

    cfg = load_config(SmokeConfig, CONFIGS / "smoke-three.yaml")
    train = load_config(TrainJobConfig, locate(cfg.train_config))
    evaluate = load_config(EvalConfig, locate(cfg.eval_config))
    assert train.harnesses == evaluate.harnesses == ("pi", "opencode", "hermes")
    assert train.serving.preset == evaluate.serving.preset == "tiny-agent"


@pytest.mark.parametrize("name", ["smoke.yaml", "smoke-three.yaml"])
def test_the_smoke_runs_evaluate_on_their_training_stack_unless_the_server_or_guard_would_differ(name: str):
    from jobs.evaluate import EvalConfig
    from jobs.smoke import locate, stack_difference
    from jobs.train import TrainJobConfig

    cfg = load_config(SmokeConfig, CONFIGS / name)
    train = load_config(TrainJobConfig, locate(cfg.train_config))
    evaluate = load_config(EvalConfig, locate(cfg.eval_config))
    assert stack_difference(train, evaluate) == ""  # the shipped smokes share one vLLM start
    for override, named in (
        ("serving.overrides=[max_model_len=4096]", "serving"),
        ("serving.preset=tiny", "serving"),
        ("guard.port=8123", "guard (port, proxy, replicas)"),
        ("guard.max_replicas=2", "guard (port, proxy, replicas)"),
    ):
        other = load_config(EvalConfig, locate(cfg.eval_config), [override])
        assert stack_difference(train, other) == f"the train and evaluation configs differ in {named}"
    assert (
        stack_difference(train, load_config(EvalConfig, locate(cfg.eval_config), ["guard.mode=monitor"]))
        == ""
    )
    fewer = load_config(TrainJobConfig, locate(cfg.train_config), ["harnesses=[hermes]"])
    assert "have no guard shard in training" in stack_difference(fewer, evaluate)


def test_an_unknown_task_set_is_named_with_the_choices(tmp_path: Path):
    from jobs.evaluate import EvalConfig
    from jobs.train import TrainJobConfig

    path = tmp_path / "bad.yaml"
    path.write_text("tasks: {set: rows}\n")
    for config in (TrainJobConfig, EvalConfig):
        with pytest.raises(ConfigError, match=r"tasks: set='rows': choose one of shipped, row-count"):
            load_config(config, path)


def test_the_guard_mode_is_a_config_key_enforce_by_default_validated_at_load(tmp_path: Path):
    from jobs.evaluate import EvalConfig
    from jobs.train import TrainJobConfig
    from serve import GuardMode

    for config, path in ((TrainJobConfig, "train-smoke.yaml"), (EvalConfig, "evaluate-smoke.yaml")):
        assert config().guard.mode is GuardMode.ENFORCE
        assert load_config(config, CONFIGS / path).guard.mode is GuardMode.ENFORCE
        assert load_config(config, CONFIGS / path, ["guard.mode=monitor"]).guard.mode is GuardMode.MONITOR
        off = load_config(config, CONFIGS / path, ["guard.mode=off"])  # YAML reads off as false
        assert off.guard.mode is GuardMode.OFF
        written = tmp_path / "off.yaml"
        written.write_text("guard: {mode: off}\n")
        assert load_config(config, written).guard.mode is GuardMode.OFF
        bad = tmp_path / "bad.yaml"
        bad.write_text("guard:\n  mode: block\n")
        with pytest.raises(
            ConfigError, match=r"bad.yaml: guard: mode='block': choose one of enforce, monitor, off"
        ):
            load_config(config, bad)
    with pytest.raises(SystemExit, match=r"guard: mode=True: choose one of enforce, monitor, off"):
        from jobs.cli import job_main
        from jobs.train import DEFAULT_CONFIG as TRAIN_DEFAULT

        job_main(TrainJobConfig, TRAIN_DEFAULT, print, "train", ["guard.mode=on"])
    for path in CONFIGS.glob(
        "*.yaml"
    ):  # every shipped train and evaluate config enforces, itself or its base
        if path.name.startswith(("train-", "evaluate")):
            cls = TrainJobConfig if path.name.startswith("train-") else EvalConfig
            assert load_config(cls, path).guard.mode == GuardMode.ENFORCE, path.name
        if path.name.startswith(("train-", "evaluate")) and "extends:" not in path.read_text():
            assert "\nguard:\n  port: 8000\n  mode: enforce" in path.read_text(), path.name


def test_the_ablation_preset_loads_and_leaves_the_train_guard_to_its_arms(tmp_path: Path):
    from jobs.ablation import DEFAULT_CONFIG as ABLATION
    from jobs.ablation import AblationConfig
    from jobs.evaluate import EvalConfig
    from jobs.smoke import locate
    from jobs.train import TrainJobConfig
    from serve import GuardMode

    cfg = load_config(AblationConfig, ABLATION)
    assert cfg.eval_guard is GuardMode.ENFORCE
    load_config(TrainJobConfig, locate(cfg.train_config), cfg.train_overrides)
    load_config(EvalConfig, locate(cfg.eval_config), cfg.eval_overrides)
    assert load_config(AblationConfig, ABLATION, ["eval_guard=monitor"]).eval_guard is GuardMode.MONITOR
    with pytest.raises(ConfigError, match=r"eval_guard='loud': choose one of enforce, monitor, off"):
        load_config(AblationConfig, ABLATION, ["eval_guard=loud"])
    with pytest.raises(ConfigError, match=r"train_overrides sets 'guard.mode=off': each arm sets the train"):
        load_config(AblationConfig, ABLATION, ["train_overrides=[guard.mode=off]"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "trainer.max_steps=ten",
            r"trainer.max_steps='ten': Input should be a valid integer.*; give a whole",
        ),
        ("harnesses=pi", r"harnesses='pi': Input should be a valid tuple; give a list"),
        ("trainer.max_steps=true", r"trainer.max_steps=True: true/false is not a number"),
        ("trainer.lora_rank=2.5", r"trainer.lora_rank=2.5: .*fractional part"),
        ("rollouts.sandbox=5", r"rollouts.sandbox=5: Input should be a valid string"),
        ("trainer.lora_rank=0", r"trainer: lora_rank=0: must be >= 1"),
        ("trainer.learning_rate=0", r"trainer: learning_rate=0.0: must be > 0"),
        ("pool.max_staleness=-1", r"pool: max_staleness=-1: must be an integer >= 0"),
        ("harnesses=[pi, 3]", r"harnesses\[1\]=\['pi', 3\]: Input should be a valid string"),
        ("max_steps=3", r"unknown key\(s\) max_steps; write trainer.max_steps"),
        ("guard.port=0", r"guard: port=0: a TCP port"),
    ],
)
def test_wrong_types_and_ranges_are_refused_at_load_in_one_line(override: str, message: str):
    from jobs.train import TrainJobConfig

    with pytest.raises(ConfigError, match=message) as info:
        load_config(TrainJobConfig, TRAIN_SMOKE, (override,))
    assert "\n" not in str(info.value)


def test_yaml_text_that_is_a_number_is_a_number():
    from jobs.train import TrainJobConfig

    cfg = load_config(
        TrainJobConfig, TRAIN_SMOKE, ("trainer.learning_rate=1e-5", "trainer.max_steps=3")
    ).trainer
    assert cfg.learning_rate == 1e-5 and isinstance(cfg.learning_rate, float) and cfg.max_steps == 3


def _config_classes():
    from actors.pool_settings import PoolSettings
    from actors.rollout_settings import RolloutSettings
    from actors.serving.config import ServingConfig
    from actors.sft.config import LoraSection, SFTConfig, SweepSection
    from actors.trainer_settings import TrainerSettings
    from environments.tasks.sources import TaskSource
    from jobs.ablation import AblationConfig
    from jobs.evaluate import CapabilitySection, EvalConfig, MergedSection
    from jobs.learning_check import LearningCheckConfig
    from jobs.sections import EvalTaskSection, ServingSection, TrainTaskSection
    from jobs.train import TrainJobConfig
    from serve.settings import GuardSettings

    return (
        TrainJobConfig,
        EvalConfig,
        ServingSection,
        GuardSettings,
        TrainTaskSection,
        EvalTaskSection,
        RolloutSettings,
        PoolSettings,
        TrainerSettings,
        MergedSection,
        CapabilitySection,
        SmokeConfig,
        AblationConfig,
        LearningCheckConfig,
        SFTConfig,
        LoraSection,
        SweepSection,
        ServingConfig,
        TaskSource,
    )


@pytest.mark.parametrize("cls", _config_classes(), ids=lambda c: c.__name__)
def test_every_config_field_is_documented(cls):
    import dataclasses

    from actors.config_loader import field_docs

    docs = field_docs(cls)
    missing = [f.name for f in dataclasses.fields(cls) if f.init and not docs.get(f.name)]
    assert missing == [], f"{cls.__name__}: document {missing} (a string right after the field)"


def test_print_config_shows_the_resolved_values_with_their_documentation(capsys):
    from jobs.train import main

    main(["--config", str(TRAIN_SMOKE), "--print-config", "trainer.learning_rate=1e-4", "harnesses=[pi]"])
    lines = capsys.readouterr().out.splitlines()
    assert 'harnesses: ["pi"]  # One trainer (and one adapter) per harness' in "\n".join(lines)
    assert "# trainer: Each trainer's LoRA, optimizer, micro-batches and resources." in lines
    assert any(
        line.startswith("trainer.learning_rate: 0.0001  # The optimizer's learning rate.") for line in lines
    )
    assert all("  # " in line for line in lines if not line.startswith("#"))  # every field has its doc


def test_a_jobs_temperature_is_checked_at_load_and_greedy_training_is_refused(tmp_path: Path):
    from jobs.evaluate import EvalConfig
    from jobs.train import TrainJobConfig

    unset = load_config(EvalConfig, CONFIGS / "evaluate-smoke.yaml", ["rollouts.temperature=null"])
    assert unset.rollouts.temperature is None
    for config, path in ((TrainJobConfig, "train-smoke.yaml"), (EvalConfig, "evaluate-smoke.yaml")):
        with pytest.raises(ConfigError, match=r"temperature=3.0: a number from 0 \(greedy\) to 2, or null"):
            load_config(config, CONFIGS / path, ["rollouts.temperature=3.0"])
    assert load_config(EvalConfig, CONFIGS / "evaluate-smoke.yaml").rollouts.temperature == 0  # greedy
    with pytest.raises(ConfigError, match=r"temperature=0: a group's greedy sessions are alike"):
        load_config(TrainJobConfig, CONFIGS / "train-smoke.yaml", ["rollouts.temperature=0"])
    greedy = ["rollouts.temperature=0", "pool.group_size=1"]
    assert load_config(TrainJobConfig, CONFIGS / "train-smoke.yaml", greedy)


@pytest.mark.parametrize(
    "name", ["smoke-real.yaml", "learning-check-real-run.yaml", "learning-check-real-lookup-run.yaml"]
)
def test_the_real_model_runs_start_from_the_sft_adapter_of_their_preset(name: str, tmp_path: Path):
    from actors.sft.config import SFTConfig
    from jobs.evaluate import EvalConfig
    from jobs.smoke import load_sft_config, locate
    from jobs.train import TrainJobConfig

    cfg = load_config(SmokeConfig, CONFIGS / name)
    sft = load_sft_config(cfg)
    assert isinstance(sft, SFTConfig) and Path(sft.out_dir).is_absolute() and not sft.full_finetune
    train = load_config(TrainJobConfig, locate(cfg.train_config))
    evaluate = load_config(EvalConfig, locate(cfg.eval_config))
    assert sft.model == train.serving.preset == evaluate.serving.preset == "smollm2-135m"
    assert train.harnesses == evaluate.harnesses == ("pi",)  # the model's 8,192 positions: not hermes
    assert train.trainer.init_adapter == "" and evaluate.start_adapter == ""  # the smoke run sets both
    assert evaluate.include_base and evaluate.capability.problems >= 4
    assert load_sft_config(load_config(SmokeConfig, CONFIGS / "smoke.yaml")) is None


@pytest.mark.parametrize(
    ("name", "family", "prefix", "demos"),
    [
        ("learning-check-real.yaml", "row-count", "rows", "demos-rows"),
        ("learning-check-real-lookup.yaml", "record-lookup", "lookup", "demos-lookup"),
    ],
)
def test_each_real_learning_check_trains_on_its_family_from_its_sft_and_validates_on_neither_split(
    name: str, family: str, prefix: str, demos: str
):
    """The real model passes none of the shipped analysis questions from its SFT start, so each check
    trains on one learning-check family alone, from the SFT adapter taught that family, and chooses its
    checkpoint on the family's validation tasks, neither trained on nor held out."""
    from jobs.evaluate import EvalConfig, eval_tasks
    from jobs.learning_check import LearningCheckConfig
    from jobs.smoke import load_sft_config, locate
    from jobs.train import TrainJobConfig

    check = load_config(LearningCheckConfig, CONFIGS / name)
    assert len(check.seeds) >= 3
    run = load_config(SmokeConfig, locate(check.smoke_config))
    assert (run.demo_tasks, run.demo_extra) == (family, 96)
    assert load_sft_config(run).traces == (f"artifacts/{demos}/pi-train.jsonl",)
    train = load_config(TrainJobConfig, locate(run.train_config))
    assert train.tasks.sources == () and train.tasks.set == family
    assert train.trackio_project == check.out_dir.split("/")[-1]  # each check's runs apart
    evaluate = load_config(EvalConfig, locate(run.eval_config))
    assert evaluate.train_dir == train.out_dir
    held = eval_tasks(evaluate.tasks, evaluate.tasks.max_tasks)
    assert held and {t.id.split("-")[0] for t in held} == {prefix}
    validation = load_config(EvalConfig, locate(run.eval_config), check.validation_overrides)
    assert validation.tasks.sources == () and validation.tasks.set == f"{family}-validation"
    chosen_on = {t.id for t in eval_tasks(validation.tasks, validation.tasks.max_tasks)}
    assert chosen_on and not chosen_on & {t.id for t in held}


def test_an_error_the_user_can_fix_is_one_line_at_run_time_and_a_bug_keeps_its_traceback(capsys):
    from actors.serving.weights import ModelSetupError
    from jobs.cli import job_main
    from jobs.train import DEFAULT_CONFIG, TrainJobConfig

    def fails(exc: Exception):
        def run(cfg):
            raise exc

        return run

    wrong = ModelSetupError(
        "m: tool_call_parser 'mistral' looks for '[TOOL_CALLS]': set tool_call_parser: hermes"
    )
    with pytest.raises(SystemExit, match=r"^error: m: tool_call_parser 'mistral' .*hermes$"):
        job_main(TrainJobConfig, DEFAULT_CONFIG, fails(wrong), "train", [])

    class Wrapped(RuntimeError):  # what Ray raises for an error inside a task or actor
        def __init__(self, cause: Exception) -> None:
            super().__init__("Traceback (most recent call last):\n  ...\n" + str(cause))
            self.cause = cause

    with pytest.raises(SystemExit, match="^error: m: tool_call_parser"):
        job_main(TrainJobConfig, DEFAULT_CONFIG, fails(Wrapped(wrong)), "train", [])
    with pytest.raises(ModelSetupError):
        job_main(TrainJobConfig, DEFAULT_CONFIG, fails(wrong), "train", ["--debug"])
    with pytest.raises(KeyError):  # the project's own bug: its traceback, always
        job_main(TrainJobConfig, DEFAULT_CONFIG, fails(KeyError("x")), "train", [])
