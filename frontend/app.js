// The controller: loads runs, hosts and steps, keeps the selection, and shows the tool.

import {api} from './api.js';
import {CompareView} from './compare.js';
import {peaksSourceText} from './device.js';
import {ALL_DEVICES, validDevice} from './device_picker.js';
import {el, show, status} from './dom.js';
import {LayersView} from './layers_view.js';
import {ModelView} from './model_view.js';
import {CALIBRATED, validPeaks} from './peaks.js';
import {renderSidebar} from './sidebar.js';
import {remember, restore, state, stepOptions} from './state.js';

const CALIBRATION_POLL_MS = 1000;

const NO_RUNS =
  'No profiles found in this logdir. Record one (jax.profiler.trace, tf.profiler, PyTorch/XLA, ' +
  'torch.profiler); the plugin reads <logdir>/**/plugins/profile/<run>/<host>.xplane.pb and ' +
  'folders of PyTorch profiler traces, <worker>.<timestamp>.pt.trace.json[.gz] (a folder is a run).';

export class App {
  constructor(root) {
    this.sidebar = el('nav', {class: 'sidebar', 'aria-label': 'Roofline selection'});
    this.modelNode = el('div', {id: 'model-view', class: 'view'});
    this.compareNode = el('div', {id: 'compare-view', class: 'view', hidden: true});
    this.layersNode = el('div', {id: 'layers-view', class: 'view', hidden: true});
    this.main = el(
      'main',
      {class: 'main', id: 'main'},
      this.modelNode,
      this.compareNode,
      this.layersNode,
    );
    show(root, this.sidebar, this.main);
    this.model = new ModelView(this.modelNode, {
      filters: state.filters,
      onFilters: (filters) => {
        state.filters = filters;
      },
      onChooseStep: (step) => this.setStep(step),
      onChoosePeaks: (peaks) => this.setPeaks(peaks),
      onCalibrate: () => this.calibrate(),
    });
    this.compare = new CompareView(this.compareNode);
    this.layers = new LayersView(this.layersNode);
    this.sides = {a: {hosts: [], steps: null}, b: {hosts: [], steps: null}};
    this.peaksText = '';
    this.peaksChoices = null; // the `peaks` route's answer
    this.polling = null;
  }

  /**
   * The sidebar first, then each list as it comes: the runs (a walk of the logdir, fast), the
   * hosts, and only then the steps, which need the profile converted (seconds for a big one,
   * with its stage and time so far in the view meanwhile).
   */
  async start() {
    this.renderSidebar();
    show(this.modelNode, status('loading', 'Looking for profiles…'));
    const peaksLoaded = this.loadPeaksChoices(); // at the same time as the runs
    const notesLoaded = this.loadLogdirNotes();
    try {
      state.runs = await api.runs();
    } catch (err) {
      this.modelNode.dataset.state = 'error';
      show(
        this.modelNode,
        status('error', 'Could not list the profiles of this logdir.', err.message),
      );
      return;
    }
    const saved = restore();
    state.tool = ['compare', 'layers'].includes(saved.tool) ? saved.tool : 'model';
    state.include = saved.include !== false;
    if (!state.runs.length) {
      await notesLoaded;
      this.renderSidebar();
      this.modelNode.dataset.state = 'empty';
      show(
        this.modelNode,
        status('empty', NO_RUNS, state.logdirNotes.length ? state.logdirNotes.join(' ') : ''),
      );
      return;
    }
    state.run = state.runs.includes(saved.run) ? saved.run : state.runs[0];
    this.renderSidebar(); // the runs, at once
    notesLoaded.then(() => state.logdirNotes.length && this.renderSidebar());
    await peaksLoaded;
    state.peaks = validPeaks(this.peaksChoices).includes(saved.peaks) ? saved.peaks : '';
    if (this.peaksChoices && this.peaksChoices.calibration.state === 'running')
      this.pollCalibration();
    if (saved.compare && saved.compare.a && saved.compare.b) state.compare = saved.compare;
    await this.chooseRun(state.run, saved);
  }

  handlers() {
    return {
      tool: (tool) => {
        state.tool = tool;
        this.update();
      },
      run: (run) => this.chooseRun(run),
      host: (host) => this.chooseHost(host),
      step: (step) => this.setStep(step),
      device: (device) => this.setDevice(device),
      include: (include) => {
        state.include = include;
        this.update();
      },
      peaks: (peaks) => this.setPeaks(peaks),
      side: {
        run: (side, run) => this.chooseSide(side, {run, host: '', step: 'total'}),
        host: (side, host) => this.chooseSide(side, {...state.compare[side], host, step: 'total'}),
        step: (side, step) => {
          state.compare[side] = {...state.compare[side], step};
          this.update();
        },
      },
    };
  }

  /** Redraws the sidebar, keeping keyboard focus on the control that had it. */
  renderSidebar() {
    const focused =
      document.activeElement && this.sidebar.contains(document.activeElement)
        ? document.activeElement.id
        : '';
    renderSidebar(
      this.sidebar,
      state,
      this.sides,
      this.handlers(),
      this.peaksText,
      this.peaksChoices,
    );
    const again = focused && document.getElementById(focused);
    if (again) again.focus();
  }

  /** What the logdir holds but is not read, said under the run list. */
  async loadLogdirNotes() {
    try {
      state.logdirNotes = (await api.logdirNotes()).notes || [];
    } catch {
      state.logdirNotes = []; // only a note: the runs are what matters
    }
  }

  async chooseRun(run, saved = {}) {
    state.run = run;
    state.hosts = [];
    this.renderSidebar();
    try {
      state.hosts = await api.hosts(run);
    } catch (err) {
      state.hosts = [];
      this.renderSidebar();
      this.modelNode.dataset.state = 'error';
      show(this.modelNode, status('error', `Could not list the hosts of ${run}.`, err.message));
      return;
    }
    const host = state.hosts.includes(saved.host) ? saved.host : state.hosts[0] || '';
    await this.chooseHost(host, saved.step, saved.device);
  }

  async chooseHost(host, savedStep, savedDevice = ALL_DEVICES) {
    const run = state.run;
    state.host = host;
    if (host) api.roofline(run, host, 'total', state.peaks).catch(() => {}); // needed by every view: start now
    // The steps need the profile converted: the sidebar shows the run and host now, the view
    // the conversion's stage and time so far.
    state.stepsLoading = Boolean(host);
    this.renderSidebar();
    if (host && state.tool === 'model')
      this.model.showLoading({run, host, step: String(savedStep ?? state.step)});
    try {
      state.steps = await api.steps(run, host);
    } catch {
      state.steps = null; // unknown: the view shows the profile's error
    }
    if (state.run !== run || state.host !== host) return; // another choice came meanwhile
    state.stepsLoading = false;
    state.devices = (state.steps && state.steps.devices) || [];
    state.device = validDevice(state.devices, savedDevice);
    if (state.device !== ALL_DEVICES) await this.loadDeviceSteps();
    const valid = stepOptions(state.steps).map(([value]) => value);
    state.step = valid.includes(String(savedStep)) ? String(savedStep) : 'total';
    await this.update();
  }

  /** One device of the host ('all': every device): its own steps, the step kept if it has it. */
  async setDevice(device) {
    state.device = validDevice(state.devices, device);
    await this.loadDeviceSteps();
    const valid = stepOptions(state.steps).map(([value]) => value);
    if (!valid.includes(state.step)) state.step = 'total';
    if (state.tool !== 'model') state.tool = 'model';
    return this.update();
  }

  /** The chosen device's steps (their durations on it), keeping the host's device list. */
  async loadDeviceSteps() {
    try {
      state.steps = {
        ...(await api.steps(state.run, state.host, state.device)),
        devices: state.devices,
      };
    } catch {
      state.steps = null;
    }
  }

  setStep(step) {
    state.step = String(step);
    if (state.tool === 'compare') state.tool = 'model';
    return this.update();
  }

  /** Fills in a compare side: its hosts and steps, keeping valid choices. */
  async loadSide(side, choice) {
    const run = state.runs.includes(choice.run) ? choice.run : state.run;
    let hosts;
    let steps = {has_step_markers: false, steps: []};
    try {
      hosts = await api.hosts(run);
    } catch {
      hosts = [];
    }
    const host = hosts.includes(choice.host) ? choice.host : hosts[0] || '';
    try {
      if (host) steps = await api.steps(run, host);
    } catch {
      // Shown by the compare view's error.
    }
    const valid = stepOptions(steps).map(([value]) => value);
    this.sides[side] = {hosts, steps};
    state.compare[side] = {
      run,
      host,
      step: valid.includes(String(choice.step)) ? String(choice.step) : 'total',
    };
  }

  async chooseSide(side, choice) {
    await this.loadSide(side, choice);
    await this.update();
  }

  /** Default compare: two hosts of this run when it has several, else this step vs the average. */
  defaultCompare() {
    const hosts = state.hosts.filter((h) => h !== 'ALL_HOSTS');
    const step = state.step;
    if (hosts.length >= 2) {
      const first = hosts.includes(state.host) ? state.host : hosts[0];
      const second = hosts.find((h) => h !== first);
      return {a: {run: state.run, host: first, step}, b: {run: state.run, host: second, step}};
    }
    const hasAverage = stepOptions(state.steps).some(([v]) => v === 'average');
    const b = {
      run: state.run,
      host: state.host,
      step: hasAverage && step !== 'average' ? 'average' : 'total',
    };
    return {a: {run: state.run, host: state.host, step}, b};
  }

  async update() {
    remember();
    const compare = state.tool === 'compare';
    this.modelNode.hidden = state.tool !== 'model';
    this.compareNode.hidden = !compare;
    this.layersNode.hidden = state.tool !== 'layers';
    if (compare) {
      this.model.endLoading(); // hidden now: its loading status stops polling
      if (!state.compare.a.run || !state.compare.b.run) state.compare = this.defaultCompare();
      await Promise.all([this.loadSide('a', state.compare.a), this.loadSide('b', state.compare.b)]);
      remember();
      this.renderSidebar();
      await this.compare.show(state.compare.a, state.compare.b, state.peaks);
      this.setPeaksText(
        this.compare.peaksSource ? `A: ${peaksSourceText(this.compare.peaksSource)}` : '',
      );
      return;
    }
    this.renderSidebar();
    if (state.tool === 'layers') {
      await this.layers.show({
        run: state.run,
        host: state.host,
        step: state.step,
        peaks: state.peaks,
        device: state.device,
      });
      const layersData = this.layers.data;
      this.setPeaksText(
        layersData && this.layersNode.dataset.state === 'ready'
          ? peaksSourceText((layersData.device || {}).peaks_source)
          : '',
      );
      return;
    }
    await this.model.show({
      run: state.run,
      host: state.host,
      step: state.step,
      include: state.include,
      peaks: state.peaks,
      device: state.device,
    });
    const data = this.model.data;
    const text =
      data && this.modelNode.dataset.state === 'ready'
        ? peaksSourceText((data.device || {}).peaks_source)
        : '';
    this.setPeaksText(text);
  }

  /** The peaks every view is judged by: '' (the profile's own), 'calibrated' or a built-in key. */
  setPeaks(peaks) {
    state.peaks = validPeaks(this.peaksChoices).includes(peaks) ? peaks : '';
    return this.update();
  }

  async loadPeaksChoices() {
    try {
      this.peaksChoices = await api.peaks();
    } catch {
      this.peaksChoices = null; // only the profile's own peaks are offered
    }
    this.model.setPeaksChoices(this.peaksChoices);
  }

  /** Starts measuring this machine on the server, then polls until it is done. */
  async calibrate() {
    try {
      const status = await api.calibrate();
      this.showCalibration(status);
    } catch (err) {
      this.showCalibration({state: 'failed', available: false, error: err.message});
      return;
    }
    this.pollCalibration();
  }

  pollCalibration() {
    if (this.polling) return;
    const tick = async () => {
      let status;
      try {
        status = await api.calibration();
      } catch (err) {
        status = {state: 'failed', available: false, error: err.message};
      }
      this.showCalibration(status);
      if (status.state === 'running') {
        this.polling = setTimeout(tick, CALIBRATION_POLL_MS);
        return;
      }
      this.polling = null;
      if (status.state === 'done') {
        api.forget(); // 'calibrated' now means the new figures
        await this.loadPeaksChoices();
        await this.setPeaks(CALIBRATED);
      }
    };
    this.polling = setTimeout(tick, CALIBRATION_POLL_MS);
  }

  showCalibration(status) {
    this.peaksChoices = {
      ...(this.peaksChoices || {builtin: [], server_peaks: false}),
      calibration: status,
    };
    this.model.setPeaksChoices(this.peaksChoices);
  }

  setPeaksText(text) {
    this.peaksText = text;
    const value = this.sidebar.querySelector('#peaks-source .value');
    if (value) value.textContent = text || '—';
  }
}
