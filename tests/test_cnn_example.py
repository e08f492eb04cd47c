"""examples/cnn_digits.py (the CNN vs ViT study): the CNN (and its BatchNorm variant) is built
from minigrad's layers and its gradient is right, the quarter split is stratified, the
variant trains (its loss falls, its running statistics move, eval uses them), and one short
run per model trains."""
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import cnn_digits


def test_cnn_shapes_and_parameter_count():
    model = cnn_digits.SmallCNN(1, 8, 10)
    out = model(mg.Tensor(np.zeros((3, 1, 8, 8), np.float32)))
    assert out.shape == (3, 10) and out.dtype == np.float32
    # conv1 16*1*9+16, conv2 32*16*9+32, head 128*10+10, counted by hand
    assert sum(p.data.size for p in model.parameters()) == 160 + 4640 + 1290


def test_cnn_gradient_matches_finite_differences():
    model = cnn_digits.SmallCNN(1, 8, 3, dtype=np.float64, seed=1)
    x = np.random.default_rng(0).standard_normal((2, 1, 8, 8))
    # the max pools see no ties with continuous random inputs
    report = mg.gradcheck(lambda x: model(x), [x])
    assert report.ok, report


def test_cnn_bn_parameters_buffers_and_gradient():
    model = cnn_digits.SmallCNN(1, 8, 3, dtype=np.float64, seed=1, batch_norm=True)
    plain = cnn_digits.SmallCNN(1, 8, 3, dtype=np.float64, seed=1)
    # the convolutions lose their biases (16 + 32), the norms bring a weight and bias each
    assert sum(p.data.size for p in model.parameters()) == \
        sum(p.data.size for p in plain.parameters()) - 48 + 2 * (16 + 32)
    np.testing.assert_array_equal(model.conv2.weight.data, plain.conv2.weight.data)
    assert "norm2.running_var" in model.state_dict()
    x = np.random.default_rng(0).standard_normal((3, 1, 8, 8))
    report = mg.gradcheck(lambda x: model(x), [x])  # training mode: the batch's statistics
    assert report.ok, report


def test_cnn_bn_trains_on_a_few_digits_and_evaluates_with_running_statistics():
    from vit.train.data import load_digits
    digits = load_digits()
    x = (digits.x_train[:64] / 16.0 - 0.3).astype(np.float32)
    y = digits.y_train[:64]
    model = cnn_digits.SmallCNN(1, 8, 10, seed=0, batch_norm=True)
    optimizer = mg.optim.SGD(list(model.parameters()), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(15):
        loss = mg.F.cross_entropy(model(mg.Tensor(x)), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
    assert losses[-1] < 0.5 * losses[0], losses
    assert int(model.norm1.num_batches_tracked) == 15 and model.norm1.running_mean.any()
    train_out = model(mg.Tensor(x)).data
    model.eval()
    eval_out = model(mg.Tensor(x)).data
    assert not np.allclose(train_out, eval_out)  # eval normalizes by the running statistics
    assert np.mean(np.argmax(eval_out, 1) == y) > 0.5


def test_quarter_is_stratified_seeded_and_sorted():
    y = np.repeat(np.arange(4), [40, 8, 13, 1])
    keep = cnn_digits.quarter(y, 0.25, seed=0)
    assert list(np.bincount(y[keep], minlength=4)) == [10, 2, 4, 1]  # ceil(count / 4)
    assert np.all(np.diff(keep) > 0)
    assert np.array_equal(keep, cnn_digits.quarter(y, 0.25, seed=0))
    assert not np.array_equal(keep, cnn_digits.quarter(y, 0.25, seed=1))


@pytest.mark.slow
def test_one_short_run_per_model_learns(tmp_path):
    for model in ("cnn", "vit", "cnn-bn"):
        r = cnn_digits.run(model, fold=0, fraction=0.25, augment=False, seed=0, epochs=3)
        assert r["test_examples"] == 360 and r["train_examples"] < 400
        assert r["accuracy"] > 0.3  # 10 classes: chance is 0.1


def test_bad_options_exit_2_with_one_line(tmp_path, capsys):
    """A negative seed, an output folder that cannot exist and a results file that is not a
    study's list are refused with exit 2 and one line, before any run."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "results.json").write_text("{not json")
    for argv, option in ((["--seed", "-1"], "--seed"),
                         (["--out", str(blocker / "study")], "--out"),
                         (["--out", str(junk)], "--out")):
        try:
            cnn_digits.main(["--epochs", "1", "--folds", "0", *argv])
        except SystemExit as e:
            assert e.code == 2, argv
        else:
            raise AssertionError(f"{argv} was accepted")
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert option in err, err
