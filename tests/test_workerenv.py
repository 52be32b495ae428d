"""The environment a worker starts with: the allow-list, and the device's own Triton mode."""
import getpass

from kdiff.sandbox.workerenv import allowed_environment, for_device, judges_user


def test_secrets_and_kdiffs_settings_stay_with_the_judge():
    judge = {"PATH": "/bin", "HF_TOKEN": "x", "KDIFF_CACHE": "/c", "TRITON_CACHE_DIR": "/t",
             "CUDA_HOME": "/cuda"}
    assert allowed_environment(judge) == {"PATH": "/bin", "TRITON_CACHE_DIR": "/t",
                                          "CUDA_HOME": "/cuda"}


def test_a_cpu_worker_interprets_triton_and_sees_no_gpu():
    env = for_device({"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0"}, "cpu")
    assert env == {"PATH": "/bin", "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}


def test_a_cuda_worker_compiles_triton_whatever_the_judges_shell_says():
    # A judge started with TRITON_INTERPRET=1 (a test session, a user's shell) once gave its
    # CUDA workers the interpreter: Triton kernels ran on the host, invisible to the profiler.
    env = for_device({"PATH": "/bin", "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "3"},
                     "cuda")
    assert env == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "3"}


def test_candidate_processes_answer_getuser_without_a_passwd_entry():
    """Workers and the judge's compiler children run as a uid with no passwd entry, where
    getpass.getuser() (inductor's cache folder, asked also when the compiler child imports
    inductor's generated code for RES-02) raises unless the environment names a user."""
    from kdiff.sandbox.launches import compiler_environment
    user = getpass.getuser()
    assert judges_user() == {"USER": user, "LOGNAME": user}
    env = compiler_environment()
    assert env["USER"] == env["LOGNAME"] == user


def test_a_confined_process_gets_the_allow_list_a_user_and_folders_of_its_own(tmp_path):
    from kdiff.sandbox.workerenv import confined_environment
    env = confined_environment({"PATH": "/bin", "HF_TOKEN": "x", "HOME": "/root"}, "cpu",
                               tmp_path)
    assert "HF_TOKEN" not in env and env["USER"] == getpass.getuser()
    assert env["HOME"] == str(tmp_path / "home") and env["TRITON_INTERPRET"] == "1"
    assert env["OMP_NUM_THREADS"] == "1"
