import{a,b,c}from"./chunk-Z4CNJVTI.js";import"./chunk-UO42L26I.js";export{b as Credentials,c as TestOutcome,a as providerWords};
