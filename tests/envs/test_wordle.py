from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omnienv.core import EpisodeOverError, ToolCall
from omnienv.envs.wordle import Wordle, accepted_words, answers, score_guess
from omnienv.envs.wordle.env import GREEN, GREY, YELLOW
from omnienv.envs.wordle.solver import next_guess, read_marks


def reference_marks(guess: str, answer: str) -> str:
    """The rule stated declaratively: a non-green letter is yellow iff its rank among the guess's
    non-green copies of that letter is within the answer's non-green copies of it."""
    green = [g == a for g, a in zip(guess, answer, strict=False)]
    marks = []
    for i, letter in enumerate(guess):
        if green[i]:
            marks.append(GREEN)
            continue
        rank = sum(1 for j in range(i + 1) if guess[j] == letter and not green[j])
        available = sum(1 for j in range(5) if answer[j] == letter and not green[j])
        marks.append(YELLOW if rank <= available else GREY)
    return "".join(marks)


words = st.text(alphabet="abcde", min_size=5, max_size=5)


@given(words, words)
def test_marks_match_the_declarative_rule(guess: str, answer: str) -> None:
    assert score_guess(guess, answer) == reference_marks(guess, answer)


@given(st.sampled_from(sorted(accepted_words())), st.sampled_from(answers("test")))
def test_marks_match_on_real_words(guess: str, answer: str) -> None:
    assert score_guess(guess, answer) == reference_marks(guess, answer)


@pytest.mark.parametrize(
    ("guess", "answer", "marks"),
    [
        ("speed", "abide", "⬛⬛🟨⬛🟨"),  # only one e in the answer: the first e is yellow
        ("geese", "eerie", "⬛🟩🟨⬛🟩"),  # greens first; one e is left for a yellow
        ("allee", "eagle", "🟨🟨⬛🟨🟩"),  # the second l finds no copy left
        ("crane", "crane", "🟩🟩🟩🟩🟩"),
    ],
)
def test_known_repeated_letter_cases(guess: str, answer: str, marks: str) -> None:
    assert score_guess(guess, answer) == marks


def test_word_lists_are_real_and_splits_disjoint() -> None:
    train, test = set(answers("train")), set(answers("test"))
    assert len(train | test) >= 2000 and len(accepted_words()) >= 10_000
    assert not train & test
    assert (train | test) <= accepted_words()
    assert all(len(w) == 5 and w.isalpha() and w.islower() for w in accepted_words())
    tasks = Wordle.tasks("test")
    assert [t.answer for t in tasks] == list(answers("test"))
    assert all(t.answer not in t.id for t in tasks)


def play(env: Wordle, *words: str) -> list:
    return [env.step(ToolCall("guess", {"word": w})) for w in words]


def test_win_reward_and_end() -> None:
    env = Wordle()
    env.reset(task="test/0000")
    answer = env.game.answer
    wrong = next(w for w in answers("train") if w != answer)
    first, last = play(env, wrong, answer)
    assert first.reward == 0 and not first.done
    assert last.done and last.info["success"] is True
    assert last.reward == pytest.approx(1 + 0.5 * (1 - 2 / 6))
    assert "Correct! Solved in 2 guesses." in last.observation.text
    with pytest.raises(EpisodeOverError):
        play(env, answer)


def test_loss_gives_partial_credit_for_best_greens() -> None:
    env = Wordle()
    env.reset(task="train/0000")
    answer = env.game.answer
    others = [w for w in answers("train") if w != answer][:6]
    results = play(env, *others)
    best = max(score_guess(w, answer).count(GREEN) for w in others)
    assert results[-1].done and results[-1].info["success"] is False
    assert results[-1].reward == pytest.approx(0.1 * best)
    assert f"The word was '{answer}'" in results[-1].observation.text


def test_invalid_guesses_cost_no_attempt_and_say_why() -> None:
    env = Wordle()
    env.reset(seed=5)
    for word, why in [
        ("abc", "not a five-letter word"),
        ("zzzzz", "not in the word list"),
        ("ab1de", "not a five-letter word"),
    ]:
        result = env.step(ToolCall("guess", {"word": word}))
        assert result.observation.is_error and why in result.observation.text
        assert "did not use an attempt" in result.observation.text
    assert env.state().fields["attempts_left"] == 6
    assert env.step(ToolCall("guess", {"word": 12345})).info["error"]["code"] == "INVALID_ARGUMENTS"


def test_turn_limit_truncates_a_stalling_agent() -> None:
    env = Wordle()
    env.reset(seed=1)
    results = [env.step(ToolCall("get_history")) for _ in range(Wordle.max_turns)]  # type: ignore[arg-type]
    assert results[-1].truncated and not results[-1].done
    assert results[-1].reward == 0.0


def test_answer_never_visible_before_the_end() -> None:
    env = Wordle()
    for seed in range(30):
        env.reset(seed=seed)
        answer = env.game.answer
        history: list[tuple[str, str]] = []
        while True:
            result = env.step(ToolCall("guess", {"word": next_guess(history)}))
            if result.over:
                break
            marks = read_marks(result.observation.text)
            assert marks is not None
            history.append(marks)
            history_text = env.step(ToolCall("get_history")).observation.text
            visible = [
                result.observation.text,
                history_text,
                json.dumps([result.info, env.state().fields], ensure_ascii=False),
            ]
            assert all(answer not in text.lower() for text in visible)


def test_seeded_task_choice() -> None:
    a, b = Wordle(), Wordle()
    a.reset(seed=42)
    b.reset(seed=42)
    assert a.game.answer == b.game.answer and a.task == b.task
    assert a.task is not None and a.task.split == "train"


def test_the_benchmarks_openenv_wordle_plays_the_same_games() -> None:
    """benchmarks/openenv_wordle restates the rules without omnienv; a seed must pick the same
    word there, or the benchmark would compare different games."""
    from benchmarks.openenv_wordle.game import answer_for
    from benchmarks.openenv_wordle.game import score_guess as their_marks

    env = Wordle()
    for seed in (0, 1, 42, 999, 2**40):
        env.reset(seed=seed)
        assert env.task is not None and answer_for(None, seed) == env.game.answer == env.task.answer
    for task in Wordle.tasks("test")[:20]:
        assert answer_for(task.id, None) == task.answer
        assert their_marks("crane", task.answer) == score_guess("crane", task.answer)
