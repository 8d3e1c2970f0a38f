// The header's time-zone setting: every time on every page shows in the
// zone chosen here (the browser's until one is chosen). A change draws the
// page again in the new zone.
import {useState} from 'react';
import {go} from './notify';
import {browserZone, setUserZone, userZone, zoneNames} from './zone';

export function ZoneSetting() {
  const [zone, setZone] = useState(userZone);
  const [names] = useState(zoneNames);
  const mine = browserZone();
  return (
    <label className="zonesetting" title="The time zone every time is shown in">
      <span>Times in</span>
      <select id="zone-setting" value={zone} onChange={(e) => {
        setUserZone(e.target.value);
        setZone(userZone());
        go(location.hash || '#/instances');
      }}>
        {names.map((z) => <option key={z} value={z}>{z === mine ? `${z} (this browser's)` : z}</option>)}
      </select>
    </label>
  );
}
